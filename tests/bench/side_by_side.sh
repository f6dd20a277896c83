#!/bin/bash
# side_by_side.sh: dpsim beside its peers, in one go (issue 16).
#
#   queue: the hold model (tests/bench_engine.c) against ns-3's schedulers
#          (ns3_queue.cc) at 10^3, 10^4 and 10^6 pending events (QUEUE_SIZES), the RNG in the
#          loop; ns-3 with its own RNG and with bench_engine's xorshift, and
#          its PriorityQueue scheduler bare (keys in and out, no simulator).
#   flows: F flows through one NIC run to completion (dpsim_flows.c, the
#          world of tests/bench_net.c part 1) against SimGrid's max-min
#          models and options (simgrid_flows.cpp), and F_WAN flows whose odd
#          half also share a WAN link (two shared links: no fast path);
#          every flow's end compared, not only the makespan (one bottleneck
#          fixes the makespan whatever the sharing).
#   rtt:   network.sharing against SimGrid's CM02: seeded worlds of N flows
#          over a shared NIC and a shared WAN link with unequal latencies
#          (rtt_world.h; dpsim_rtt.c, simgrid_rtt.cpp), every flow's end
#          under dpsim's rtt and maxmin beside CM02's (not timed).
#
# The programs run in turn (dpsim, then each peer configuration), RUNS
# times, so a change in the machine's load hits both sides; each line
# reports the median and the ratio of medians.  Times are processor time
# of the timed section (the machine is shared).  A peer that is not
# installed is skipped with a note.  The flow runs compare each flow's end
# under each SimGrid configuration with dpsim's (same model, same answer:
# within 1e-6 relative) and take the ratio against the fastest that agrees
# (LV08 adds TCP correction factors, so it does not).
#
# Usage: side_by_side.sh [queue] [flows] [rtt]  (default: all three)
# Environment: RUNS (queue, default 5), QUEUE_SIZES (pending events, default
# "1000 10000 1000000"), FLOW_RUNS (default 3), STEPS
# (queue steps, default 2000000), F (flows, default 10000), F_WAN (flows of
# the two-link world, default 2000), PEER_TIMEOUT
# (seconds one ns-3 run may take, default 120: past it that scheduler is
# reported as not finishing and not run again); the programs'
# paths come from meson (`meson test -C build --benchmark side_by_side
# --verbose`): DPSIM_BENCH_ENGINE, DPSIM_FLOWS, DPSIM_RTT, NS3_QUEUE,
# SIMGRID_FLOWS, SIMGRID_RTT.  RTT_N (flows per world, default 16) and
# RTT_SEEDS (worlds, default 20) size the rtt part.
set -euo pipefail

RUNS=${RUNS:-5}
QUEUE_SIZES=${QUEUE_SIZES:-1000 10000 1000000}
FLOW_RUNS=${FLOW_RUNS:-3}
STEPS=${STEPS:-2000000}
F=${F:-10000}
F_WAN=${F_WAN:-2000}
PEER_TIMEOUT=${PEER_TIMEOUT:-120}
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(queue flows rtt)
for p in "${parts[@]}"; do
    case $p in
    queue | flows | rtt) ;;
    *)
        echo "side_by_side.sh: unknown part '$p' (queue, flows, rtt)" >&2
        exit 2
        ;;
    esac
done
RTT_N=${RTT_N:-16}
RTT_SEEDS=${RTT_SEEDS:-20}
for P in $QUEUE_SIZES; do
    if ! [[ $P =~ ^[1-9][0-9]*$ ]]; then
        echo "side_by_side.sh: QUEUE_SIZES must be positive integers (got '$QUEUE_SIZES')" >&2
        exit 2
    fi
done
for v in RUNS FLOW_RUNS STEPS F F_WAN PEER_TIMEOUT RTT_N RTT_SEEDS; do
    if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]]; then
        echo "side_by_side.sh: $v must be a positive integer (got '${!v}')" >&2
        exit 2
    fi
done
: "${DPSIM_BENCH_ENGINE:?set by meson: the bench_engine program}"
: "${DPSIM_FLOWS:?set by meson: the dpsim_flows program}"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { # the median of the numbers on stdin
    sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
# field VALUE_AFTER LINE: the number that follows the words VALUE_AFTER
field() {
    awk -v key="$1" '{n = split(key, k, " "); for (i = 1; i + n <= NF; i++) {ok = 1; for (j = 1; j <= n; j++) if ($(i + j - 1) != k[j]) ok = 0; if (ok) {v = $(i + n); gsub(/[,;]/, "", v); print v; exit}}}' <<<"$2"
}

# ns-3's schedulers worth running at P pending: List inserts in O(P), so at
# 10^6 its initial fill alone would take hours; it runs at 10^3 only.
scheds() {
    if [ "$1" -le 1000 ]; then echo PriorityQueue Map Heap Calendar List; else echo PriorityQueue Map Heap Calendar; fi
}

queue() {
    echo "== event queue: hold model, exponential increments (mean 1 s) drawn in the loop; $STEPS timed events"
    echo "   (ns-3's List: at most 100000, and only at 10^3: O(pending) per insert); $RUNS runs in turn;"
    echo "   median M events/s of processor time"
    local have_ns3=1
    if [ -z "${NS3_QUEUE:-}" ]; then
        have_ns3=0
        echo "   ns-3 not built (apt-get install libns3-dev g++, then meson setup --reconfigure): dpsim alone"
    fi
    for P in $QUEUE_SIZES; do
        for ((r = 0; r < RUNS; r++)); do
            out=$("$DPSIM_BENCH_ENGINE" "$P" "$STEPS" 1)
            field "median" "$out" >>"$tmp/q.$P.dpsim"
            field "peak RSS" "$out" >>"$tmp/m.$P.dpsim"
            [ $have_ns3 = 1 ] || continue
            for s in $(scheds "$P"); do
                steps=$STEPS
                if [ "$s" = List ]; then steps=$((STEPS < 100000 ? STEPS : 100000)); fi
                for rng in ns3 xorshift; do
                    [ -e "$tmp/slow.$P.$s.$rng" ] && continue
                    if ! out=$(timeout "$PEER_TIMEOUT" "$NS3_QUEUE" "$s" "$P" "$steps" 1 --rng=$rng); then
                        touch "$tmp/slow.$P.$s.$rng" # not again: one such run says enough
                        continue
                    fi
                    field "median" "$out" >>"$tmp/q.$P.$s.$rng"
                    field "peak RSS" "$out" >>"$tmp/m.$P.$s.$rng"
                done
            done
            # ns-3's best scheduler alone: no event objects, no dispatch
            out=$("$NS3_QUEUE" PriorityQueue "$P" "$STEPS" 1 --rng=xorshift --bare)
            field "median" "$out" >>"$tmp/q.$P.bare"
            field "peak RSS" "$out" >>"$tmp/m.$P.bare"
        done
        ours=$(median <"$tmp/q.$P.dpsim")
        printf '\n| %s pending | RNG | M events/s | peak RSS (MB) | dpsim / this |\n|---|---|---:|---:|---:|\n' "$P"
        printf '| dpsim | xorshift | %.2f | %.1f | 1.00 |\n' "$ours" "$(median <"$tmp/m.$P.dpsim")"
        [ $have_ns3 = 1 ] || continue
        best=0 best_name="" bestx=0
        for s in $(scheds "$P"); do
            for rng in ns3 xorshift; do
                if [ -e "$tmp/slow.$P.$s.$rng" ]; then
                    printf '| ns-3 %s | %s | did not finish within %s s (fill + %s events) | | |\n' "$s" "$rng" \
                        "$PEER_TIMEOUT" "$STEPS"
                    continue
                fi
                v=$(median <"$tmp/q.$P.$s.$rng")
                printf '| ns-3 %s | %s | %.3f | %.1f | %.2f |\n' "$s" "$rng" "$v" "$(median <"$tmp/m.$P.$s.$rng")" \
                    "$(awk -v a="$ours" -v b="$v" 'BEGIN {print a / b}')"
                if [ $rng = ns3 ] && awk -v a="$v" -v b="$best" 'BEGIN {exit !(a > b)}'; then best=$v best_name=$s; fi
                if [ $rng = xorshift ] && awk -v a="$v" -v b="$bestx" 'BEGIN {exit !(a > b)}'; then bestx=$v; fi
            done
        done
        bare=$(median <"$tmp/q.$P.bare")
        printf '| ns-3 PriorityQueue, bare (the scheduler alone) | xorshift | %.3f | %.1f | %.2f |\n' "$bare" \
            "$(median <"$tmp/m.$P.bare")" "$(awk -v a="$ours" -v b="$bare" 'BEGIN {print a / b}')"
        awk -v a="$ours" -v b="$best" -v c="$bestx" -v d="$bare" -v n="$best_name" -v P="$P" 'BEGIN {
            printf "ratio at %d pending: dpsim / best ns-3 (%s, its RNG) = %.2f; with the same xorshift RNG = %.2f; against the bare PriorityQueue scheduler = %.2f (target >= 2)\n", P, n, a / b, a / c, a / d }'
    done
}

# The largest relative difference between the second column of two
# "i end_s" listings.
maxrel() {
    paste "$1" "$2" | awk '{d = ($4 - $2) / $2; if (d < 0) d = -d; if (d > m) m = d} END {printf "%.3g", m}'
}

# One flow world (WORLD: "" for the NIC alone, --wan for the second shared
# link) with NF flows: processor time in turn, then every flow's end from
# each program (untimed: SimGrid then needs an actor per flow), compared
# flow by flow with dpsim's.
flow_world() {
    local NF=$1 WORLD=$2 tag=f$2
    local cm02="--cfg=network/model:CM02 --cfg=network/crosstraffic:0"
    local names=("CM02, optim Lazy (SimGrid's default optim)" "CM02, optim Full" "CM02, optim Full, solver fairbottleneck"
        "LV08 (SimGrid's default model)")
    local cfgs=("$cm02" "$cm02 --cfg=network/optim:Full" "$cm02 --cfg=network/optim:Full --cfg=network/solver:fairbottleneck" "")
    local have_sg=1
    if [ -z "${SIMGRID_FLOWS:-}" ]; then
        have_sg=0
        echo "   SimGrid not built (apt-get install libsimgrid-dev g++, then meson setup --reconfigure): dpsim alone"
    fi
    # shellcheck disable=SC2086 # WORLD and the options are words
    for ((r = 0; r < FLOW_RUNS; r++)); do
        out=$("$DPSIM_FLOWS" "$NF" $WORLD)
        field "cpu" "$out" >>"$tmp/$tag.dpsim"
        field "makespan" "$out" >"$tmp/$tag.span.dpsim"
        field "peak RSS" "$out" >>"$tmp/$tag.m.dpsim"
        [ $have_sg = 1 ] || continue
        for i in "${!cfgs[@]}"; do
            out=$("$SIMGRID_FLOWS" "$NF" $WORLD ${cfgs[$i]} 2>/dev/null)
            field "cpu" "$out" >>"$tmp/$tag.$i"
            field "makespan" "$out" >"$tmp/$tag.span.$i"
            field "peak RSS" "$out" >>"$tmp/$tag.m.$i"
        done
    done
    ours=$(median <"$tmp/$tag.dpsim")
    span=$(cat "$tmp/$tag.span.dpsim")
    printf '\n| F = %s | makespan (s) | each flow'"'"'s end vs dpsim (max rel) | cpu s | peak RSS (MB) | this / dpsim |\n|---|---:|---:|---:|---:|---:|\n' "$NF"
    printf '| dpsim | %s | - | %.3f | %.1f | 1.00 |\n' "$span" "$ours" "$(median <"$tmp/$tag.m.dpsim")"
    [ $have_sg = 1 ] || return 0
    # shellcheck disable=SC2086
    "$DPSIM_FLOWS" "$NF" $WORLD --ends "$tmp/$tag.ends.dpsim" >/dev/null
    best=""
    for i in "${!cfgs[@]}"; do
        # shellcheck disable=SC2086
        "$SIMGRID_FLOWS" "$NF" $WORLD --ends "$tmp/$tag.ends.$i" ${cfgs[$i]} >/dev/null 2>&1
        rel=$(maxrel "$tmp/$tag.ends.$i" "$tmp/$tag.ends.dpsim")
        v=$(median <"$tmp/$tag.$i")
        printf '| SimGrid %s | %s | %s | %.3f | %.1f | %.2f |\n' "${names[$i]}" "$(cat "$tmp/$tag.span.$i")" "$rel" "$v" \
            "$(median <"$tmp/$tag.m.$i")" "$(awk -v a="$v" -v b="$ours" 'BEGIN {print a / b}')"
        if awk -v r="$rel" 'BEGIN {exit !(r <= 1e-6)}' && { [ -z "$best" ] || awk -v a="$v" -v b="$best" 'BEGIN {exit !(a < b)}'; }; then
            best=$v best_name=${names[$i]}
        fi
    done
    if [ -n "$best" ]; then
        awk -v a="$best" -v b="$ours" -v n="$best_name" 'BEGIN {
            printf "ratio: best SimGrid option whose every flow ends where dpsim'"'"'s does (1e-6) (%s) / dpsim = %.2f (target >= 1)\n", n, a / b }'
    else
        echo "no SimGrid configuration ends every flow where dpsim does: no ratio"
    fi
}

flows() {
    echo
    echo "== flows: $F flows through one NIC (1.25e9 B/s) and their own access links, run to completion"
    echo "   (dpsim's star fast path); $FLOW_RUNS runs in turn; median processor seconds of the run"
    flow_world "$F" ""
    echo
    echo "== flows, two shared links: $F_WAN flows as above, every odd one also through one WAN link of 2e8 B/s"
    echo "   (no star: progressive filling); $FLOW_RUNS runs in turn; median processor seconds of the run"
    flow_world "$F_WAN" --wan
}

rtt() {
    echo
    echo "== rtt: $RTT_SEEDS seeded worlds of $RTT_N flows (tests/bench/rtt_world.h): a shared NIC, a shared"
    echo "   WAN link for half of them, unequal latencies, a 4 MiB window; each flow's end against SimGrid CM02"
    : "${DPSIM_RTT:?set by meson: the dpsim_rtt program}"
    if [ -z "${SIMGRID_RTT:-}" ]; then
        echo "   SimGrid not built (apt-get install libsimgrid-dev g++, then meson setup --reconfigure): nothing to compare"
        return 0
    fi
    local cm02="--cfg=network/model:CM02 --cfg=network/crosstraffic:0 --cfg=maxmin/precision:1e-9"
    cm02+=" --cfg=surf/precision:1e-9"
    printf '\n| seed | rtt vs CM02 (max rel) | maxmin vs CM02 (max rel) |\n|---:|---:|---:|\n'
    local worst_r=0 worst_m=0
    for ((seed = 1; seed <= RTT_SEEDS; seed++)); do
        # shellcheck disable=SC2086 # the options are words
        "$SIMGRID_RTT" "$RTT_N" "$seed" $cm02 >"$tmp/sg" 2>/dev/null
        "$DPSIM_RTT" "$RTT_N" "$seed" rtt >"$tmp/rt"
        "$DPSIM_RTT" "$RTT_N" "$seed" maxmin >"$tmp/mm"
        r=$(maxrel "$tmp/sg" "$tmp/rt")
        m=$(maxrel "$tmp/sg" "$tmp/mm")
        printf '| %d | %s | %s |\n' "$seed" "$r" "$m"
        worst_r=$(awk -v a="$r" -v b="$worst_r" 'BEGIN {print (a > b) ? a : b}')
        worst_m=$(awk -v a="$m" -v b="$worst_m" 'BEGIN {print (a > b) ? a : b}')
    done
    echo "worst: rtt $worst_r, maxmin $worst_m (CM02 solves to its precision, 1e-9 here)"
}

for p in "${parts[@]}"; do "$p"; done
