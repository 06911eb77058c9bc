#!/bin/sh
# Fault injection for the ring checker: seeds one interleaving bug at a time into a copy of
# runq.c (never into the source tree), builds runq_model against it and requires the checker to
# report a violation. Shows that the checker is not vacuous, and keeps it that way.
#
#   mutants.sh CC CORE_DIR PUBLIC_INCLUDE WORK_DIR
#
# Exit status: 0 every mutant caught; 1 a mutant survived (or a build failed); 77 (ctest
# "skipped") when a mutation no longer applies because runq.c changed: update the patterns.
# Needs perl (perl-base is part of every Debian system).
set -u
CC=$1
CORE=$2
PUBLIC=$3
WORK=$4
MODEL=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$WORK"

survived=0
stale=0
n=0

# mutant NAME SCENARIO PERL_SUBSTITUTION: builds the mutant and explores the scenario meant to
# catch it (the others take longer, and a mutant that only they catch would say little).
# Patterns that span statements allow one-line comments between them (the pairing notes that
# make lint asks for).
mutant() {
    name=$1
    scenario=$2
    subst=$3
    n=$((n + 1))
    dir=$WORK/$name
    mkdir -p "$dir"
    perl -0777 -pe "$subst" "$CORE/scheduler/runq.c" > "$dir/runq.c"
    if cmp -s "$CORE/scheduler/runq.c" "$dir/runq.c"; then
        echo "STALE    $name: the mutation no longer applies to runq.c (update mutants.sh)"
        stale=$((stale + 1))
        return
    fi
    if ! "$CC" -std=gnu11 -O2 -DCQ_MODEL_CHECK -DCQ_RUNQ_CAPACITY=4u \
            -I"$MODEL" -I"$CORE" -I"$PUBLIC" "$MODEL/runq_model.c" "$MODEL/mc.c" \
            "$dir/runq.c" -o "$dir/runq_model" 2> "$dir/build.log"; then
        echo "BUILD    $name: the mutant does not compile:"
        cat "$dir/build.log"
        survived=$((survived + 1))
        return
    fi
    "$dir/runq_model" --scenario "$scenario" > "$dir/out.log" 2>&1
    if grep -q '^VIOLATION' "$dir/out.log"; then
        echo "CAUGHT   $name: $(grep '^VIOLATION' "$dir/out.log" | head -1)"
        echo "         ($(grep -c '^ *>\? *[0-9]* *T[0-9]' "$dir/out.log") steps in the schedule;" \
             "full report in $dir/out.log)"
    else
        echo "SURVIVED $name: no violation found"
        survived=$((survived + 1))
    fi
}

# 1. push measures the room from `real` instead of `steal`: it overwrites slots a thief is
#    still copying.
mutant push_room_from_real pop_steal \
    's/if \(tail - head_steal\(head\) < CQ_RUNQ_CAPACITY\)/if (tail - head_real(head) < CQ_RUNQ_CAPACITY)/'

# 2. a thief does not back off while another thief's claim is in progress.
mutant steal_ignores_claim two_thieves_refill \
    's/        if \(steal != real\) \{\n            return 0; \/\* another thief is copying \*\/\n        \}\n//'

# 3. a thief releases its claim with a plain store: the owner's pops meanwhile are undone.
mutant steal_release_store pop_steal \
    's/    for \(;;\) \{\n        uint64_t next = head_pack\(head_real\(prev\), head_real\(prev\)\);\n(?:[ ]*\/\*[^\n]*\*\/\n)*        if \(cq__cas\(&src->head, &prev, next, acq_rel\)\) \{\n            break;\n        \}\n    \}/    cq__store(&src->head, head_pack(first + n, first + n), release);/'

# 4. the claim-release CAS is not retried when the owner moved `real` meanwhile ("drop a CAS
#    retry"): the claim stays behind.
mutant steal_release_no_retry pop_steal \
    's/        if \(cq__cas\(&src->head, &prev, next, acq_rel\)\) \{\n            break;\n        \}/        (void)cq__cas(&src->head, &prev, next, acq_rel);\n        break;/'

# 5. pop_back takes the last item without contesting it with a CAS.
mutant popback_no_contest popback_steal \
    's/        if \(cq__cas\(&rq->head, &head, next, acq_rel\)\) \{\n            cq__store\(&rq->tail, t \+ 1, relaxed\);/        cq__store(&rq->head, next, relaxed);\n        {\n            cq__store(&rq->tail, t + 1, relaxed);/'

# 6. push_overflow claims the oldest half with a plain store instead of a CAS.
mutant overflow_plain_store overflow_steal \
    's/    if \(!cq__cas\(&rq->head, &head, head_pack\(real \+ n, real \+ n\), acq_rel\)\) \{\n        return false;\n    \}/    cq__store(&rq->head, head_pack(real + n, real + n), release);/'

# 7. two statements swapped: pop_back reads head before lowering the tail. A thief that
#    completes one steal in between and steals again claims the item the owner already decided
#    to keep (a single steal could not reach it); so does a second thief.
mutant popback_head_before_tail popback_two_thieves \
    's/    cq__store\(&rq->tail, t, seq_cst\);\n(?:[ ]*\/\*[^\n]*\*\/\n)*    head = cq__load\(&rq->head, seq_cst\);/    head = cq__load(&rq->head, seq_cst);\n    cq__store(&rq->tail, t, seq_cst);/'

echo "$n mutants: $((n - survived - stale)) caught, $survived survived, $stale no longer apply"
if [ "$survived" -ne 0 ]; then
    exit 1
fi
if [ "$stale" -ne 0 ]; then
    exit 77
fi
exit 0
