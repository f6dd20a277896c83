#!/usr/bin/env bash
# e2e_jobs.sh: many jobs in one world through the binary (dpsim jobs,
# sim/jobs/): tables, JSON, the database, export, plot jobs, check, and bad
# input (FILE:LINE:COL, exit 2, nothing stored).
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"

S=$SRC/scenarios/jobs-fifo.yaml
cp "$S" "$T/a.yaml"

# a run per scheduler, stored; the same seed gives the same figures
expect 0 "jobs, every scheduler" -- "$BIN" jobs "$S" -S all --db "$T/j.db" -q
has "$T/out" "scheduler fifo: 3 jobs on 4 devices"
has "$T/out" "scheduler themis: 3 jobs on 4 devices"
has "$T/out" "scheduler pollux: 3 jobs on 4 devices"
has "$T/out" "Jain's index"
# held: what a job held at once, not what it asked for (pollux gives job a,
# asking for 2, one device: on this world one device is faster)
awk '/^scheduler pollux/ {p = 1} p && $1 == "a" {print $3, $4; exit}' "$T/out" | grep -qx "2 1" \
    && ok "held shows pollux's count" || bad "held column: pollux's job a not shown holding 1 of the 2 it asked"
[ "$(sqlite3 "$T/j.db" 'SELECT count(*) FROM jobs_runs')" = 5 ] && ok "five jobs runs stored" || bad "jobs_runs rows"
[ "$(sqlite3 "$T/j.db" 'SELECT count(*) FROM jobs')" = 15 ] && ok "a jobs row per job" || bad "jobs rows"
v=$(sed -n 's/^#define STORE_SCHEMA_VERSION \([0-9]*\)/\1/p' "$SRC/sim/store/store.h")
[ "$(sqlite3 "$T/j.db" 'PRAGMA user_version')" = "$v" ] && ok "schema version $v" || bad "schema version"
expect 0 "json" -- "$BIN" jobs "$S" -S fifo,las --no-db --json
cp "$T/out" "$T/j1.json"
expect 0 "json again" -- "$BIN" jobs "$S" -S fifo,las --no-db --json
cmp -s "$T/out" "$T/j1.json" && ok "deterministic JSON" || bad "two runs differ"
python3 -c "import json,sys; d=json.load(open('$T/j1.json')); r=d['runs']; assert [x['scheduler'] for x in r]==['fifo','las']; assert len(r[0]['jobs'])==3 and r[0]['allocations']" &&
    ok "JSON shape" || bad "JSON shape"
# runs lists jobs runs (jN) after the runs; show jN prints one again
expect 0 "runs lists jobs runs" -- "$BIN" runs --db "$T/j.db"
has "$T/out" "runs of many jobs (dpsim jobs; dpsim show jN):"
has "$T/out" "j5  "
grep -q "jobs-fifo  pollux" "$T/out" && ok "runs names the scheduler" || bad "runs: no pollux row"
expect 0 "runs --last 1" -- "$BIN" runs --db "$T/j.db" --last 1
[ "$(grep -c '^ *j[0-9]' "$T/out")" = 1 ] && ok "--last chooses jobs runs too" || bad "runs --last 1: $(cat "$T/out")"
expect 0 "runs --policy leaves jobs runs out" -- "$BIN" runs --db "$T/j.db" --policy ddp
grep -q "runs of many jobs" "$T/out" && bad "runs --policy listed jobs runs" || ok "no jobs runs under --policy"
expect 0 "show j1" -- "$BIN" show j1 --db "$T/j.db"
has "$T/out" "jobs run j1: jobs-fifo"
has "$T/out" "scheduler fifo: 3 jobs on 4 devices"
expect 0 "jobs fifo json" -- "$BIN" jobs "$S" -S fifo --no-db --json
cp "$T/out" "$T/fifo.json"
expect 0 "show j1 --json" -- "$BIN" show j1 --db "$T/j.db" --json
python3 -c "import json; a=json.load(open('$T/fifo.json')); b=json.load(open('$T/out')); assert a == b, (a, b)" &&
    ok "show jN --json is the run's own JSON" || bad "show j1 --json differs from dpsim jobs --json"
expect 2 "show a missing jobs run" -- "$BIN" show j99 --db "$T/j.db"
has "$T/err" "no jobs run j99"
expect 2 "show a bad jobs id" -- "$BIN" show jx --db "$T/j.db"
has "$T/err" "a jobs run is jN"
# merge carries jobs runs with their jobs and allocations, ids remapped;
# merging the same file again adds nothing
expect 0 "runs before the merge" -- "$BIN" run "$SRC/scenarios/tiny.yaml" -q -p ddp --db "$T/m.db"
expect 0 "merge jobs" -- "$BIN" merge "$T/m.db" "$T/j.db"
has "$T/out" "5 jobs runs added, 0 already there"
q() { sqlite3 "$1" "SELECT count(*) FROM jobs_runs; SELECT count(*) FROM jobs; SELECT count(*) FROM job_allocs;
    SELECT group_concat(scheduler || ':' || makespan_s || ':' || n_jobs, ',') FROM (SELECT * FROM jobs_runs ORDER BY started_at, scheduler);
    SELECT count(*) FROM job_allocs a JOIN jobs_runs r ON r.id = a.jobs_run_id;
    SELECT group_concat(DISTINCT s.name) FROM jobs_runs r JOIN scenarios s ON s.id = r.scenario_id;" | tr '\n' ' '; }
[ "$(q "$T/m.db")" = "$(q "$T/j.db")" ] && ok "merged jobs rows" || bad "merged jobs rows: $(q "$T/m.db") vs $(q "$T/j.db")"
expect 0 "merge jobs again" -- "$BIN" merge "$T/m.db" "$T/j.db"
has "$T/out" "0 jobs runs added, 5 already there"
[ "$(q "$T/m.db")" = "$(q "$T/j.db")" ] && ok "no duplicates" || bad "merged twice: $(q "$T/m.db")"
expect 0 "export" -- "$BIN" export --csv --db "$T/j.db" --out "$T/csv/"
[ -s "$T/csv/jobs.csv" ] && [ -s "$T/csv/jobs_runs.csv" ] && [ -s "$T/csv/job_allocs.csv" ] &&
    ok "jobs tables exported" || bad "jobs CSV files missing"
if command -v gnuplot >/dev/null; then
    expect 0 "plot jobs" -- "$BIN" plot jobs --db "$T/j.db" --out "$T/jobs.png"
    [ -s "$T/jobs.png" ] && ok "jobs.png drawn" || bad "no jobs.png"
fi
expect 0 "check" -- "$BIN" check "$S"
has "$T/out" "3 jobs (3 distinct settings), scheduler fifo"
expect 2 "run refuses jobs" -- "$BIN" run "$S" --no-db
has "$T/err" "has jobs: run it with \`dpsim jobs"

# bad input: FILE:LINE:COL, exit 2, nothing stored
bad_input() { # NAME FILE WANT
    expect 2 "$1" -- "$BIN" jobs "$2" --db "$T/bad.db"
    has "$T/err" "$3"
    [ ! -e "$T/bad.db" ] && ok "$1: nothing stored" || { bad "$1: a database was written"; rm -f "$T/bad.db"; }
}
sed 's/devices: 4, set/devices: 5, set/' "$T/a.yaml" >"$T/big.yaml"
bad_input "more devices than exist" "$T/big.yaml" "big.yaml:29:51: jobs[1] (b): devices: 5, but the world has 4"
sed 's/name: fifo, restart/name: fiffo, restart/' "$T/a.yaml" >"$T/sch.yaml"
bad_input "unknown scheduler" "$T/sch.yaml" "sch.yaml:26:20: scheduler.name: unknown scheduler, did you mean 'fifo'?"
expect 2 "unknown --scheduler" -- "$BIN" jobs "$S" --no-db -S fifo,lass
has "$T/err" "unknown scheduler 'lass'"
# what many jobs do not model yet is refused, not ignored
expect 0 "power in jobs" -- "$BIN" jobs "$S" --no-db --json --set 'devices.gpu.power={compute: 5W, transmit: 1W, receive: 1W, idle: 0.1W}'
python3 -c "
import json; j = json.load(open('$T/out'))['runs'][0]['jobs']
assert all(any(s['name'] == 'energy.total_j' and s['value'] > 0 for s in x['stats']) for x in j)" &&
    ok "each job's energy among its statistics" || bad "jobs' energy"
expect 2 "batteries in jobs" -- "$BIN" jobs "$S" --no-db --set 'devices.gpu.power={compute: 5W}' \
    --set 'devices.gpu.battery={capacity: 10Wh}'
has "$T/err" "cannot run batteries"
expect 2 "data parts in jobs" -- "$BIN" jobs "$S" --no-db --set 'dataset.parts=[{at: gpu, samples: 100%}]'
has "$T/err" "cannot place the data"
sed 's/policy: cadp/policy: cdap/' "$T/a.yaml" >"$T/pol.yaml"
bad_input "unknown policy" "$T/pol.yaml" "pol.yaml:30:37: jobs[2]: policy: unknown policy 'cdap'"
cat >"$T/static.yaml" <<'YAML'
name: parts
model: { params: 1000, flops_per_sample: 1e6 }
dataset: { samples: 100, sample_bytes: 1KB }
training: { epochs: 1 }
devices:
  - { name: g1, count: 2, kind: gpu, memory: 1GiB, batch: 10, batch_time: 1s, link: { up: 8Mbps, down: 8Mbps } }
  - { name: g2, count: 1, kind: gpu, memory: 1GiB, batch: 10, batch_time: 1s, link: { up: 8Mbps, down: 8Mbps } }
scheduler: static
jobs:
  - { name: a, arrival: 0s, policy: ddp, groups: [g1] }
  - { name: b, arrival: 0s, policy: ddp, groups: [g2, g1] }
YAML
bad_input "overlapping claims" "$T/static.yaml" "static.yaml:11:55: jobs[1].groups: device g1[0] is claimed by job a too"
sed 's/groups: \[g2, g1\]/groups: [g2]/' "$T/static.yaml" >"$T/static-ok.yaml"
expect 0 "static partition" -- "$BIN" jobs "$T/static-ok.yaml" --no-db
printf 'name,time,application,num_replicas,batch_size\na,10,cifar10,1,128\nb,5,ncf,2,256\n' >"$T/t.csv"
sed '/^jobs:/,$d' "$T/a.yaml" >"$T/tr.yaml"
echo "jobs: t.csv" >>"$T/tr.yaml"
bad_input "trace out of order" "$T/tr.yaml" "t.csv:3:3: jobs trace: arrival before the previous job's"
printf 'name,time,application,num_replicas,batch_size\n' >"$T/t.csv"
bad_input "a trace with no jobs" "$T/tr.yaml" "t.csv:1:1: jobs trace: no jobs after the header"
printf 'name,time,application,num_replicas,batch_size\na,10,cifar11,1,128\n' >"$T/t.csv"
bad_input "unknown application" "$T/tr.yaml" "t.csv:2:6: jobs trace: unknown application"
printf 'name,arrival,application,epochs,devices,batch\na,0s,cifar10,1,9,32\n' >"$T/t.csv"
bad_input "trace asks for more devices" "$T/tr.yaml" "t.csv:2:16: jobs[0] (a): devices: 9, but the world has 4"
printf 'name,arrival,application,epochs,devices,batch,policy\na,0s,ncf,1,2,64,localsgd\nb,1s,ncf,1,2,64\n' >"$T/t.csv"
expect 0 "dpsim trace shape" -- "$BIN" jobs "$T/tr.yaml" --no-db --json
python3 -c "import json; d=json.load(open('$T/out')); j=d['runs'][0]['jobs']; assert [x['policy'] for x in j]==['localsgd','ddp']" &&
    ok "trace policy column" || bad "trace policies"
# with train_to: progress a trace job trains to its application's progress
# (traces/pollux/): cifar10 at batch 512 (M0 128, B = 72.5 over its first
# 391 steps of progress) makes 0.343 of an epoch's progress an epoch, so its
# 1 epoch takes 3; at 128, 1.  By default, 1 each.
printf 'name,arrival,application,epochs,devices,batch\na,0s,cifar10,1,1,512\nb,0s,cifar10,1,1,128\n' >"$T/t.csv"
expect 0 "trace efficiency" -- "$BIN" jobs "$T/tr.yaml" --no-db --json --set scheduler.train_to=progress
python3 -c "import json; d=json.load(open('$T/out')); j=d['runs'][0]['jobs']; assert [x['epochs'] for x in j]==[3, 1], j" &&
    ok "trace jobs train to their application's progress" || bad "trace job epochs"
expect 0 "trace, epochs" -- "$BIN" jobs "$T/tr.yaml" --no-db --json
python3 -c "import json; d=json.load(open('$T/out')); j=d['runs'][0]['jobs']; assert [x['epochs'] for x in j]==[1, 1], j" &&
    ok "train_to: epochs by default" || bad "trace job epochs by default"
# Pollux's own first workload (traces/jobs/pollux-workload-1.csv) on the
# 64-GPU world: all 160 jobs run
cp "$SRC/traces/jobs/pollux-workload-1.csv" "$T/w1.csv"
sed 's#jobs: ../traces/jobs/pollux-shape-160.csv#jobs: w1.csv#' "$SRC/scenarios/jobs-pollux.yaml" >"$T/w1.yaml"
expect 0 "pollux workload 1" -- "$BIN" jobs "$T/w1.yaml" -S fifo --no-db --json
python3 -c "import json; d=json.load(open('$T/out')); j=d['runs'][0]['jobs']; assert len(j)==160 and j[0]['name']=='cifar10-0', len(j)" &&
    ok "Pollux's workload 1: 160 jobs" || bad "Pollux's workload 1"

# elastic jobs (pollux): a range and an efficiency; bad ranges refused
sed 's/devices: 4, set/devices: 4, min_devices: 2, max_devices: 4, weight: 2, efficiency: { reference_batch: 64, noise_scale: [500, 2000] }, set/' "$T/a.yaml" >"$T/el.yaml"
expect 0 "pollux, elastic" -- "$BIN" jobs "$T/el.yaml" --no-db -S pollux --json
cp "$T/out" "$T/el1.json"
expect 0 "pollux again" -- "$BIN" jobs "$T/el.yaml" --no-db -S pollux --json
cmp -s "$T/out" "$T/el1.json" && ok "pollux deterministic" || bad "pollux: two runs differ"
sed 's/devices: 4, set/devices: 4, min_devices: 5, set/' "$T/a.yaml" >"$T/r1.yaml"
bad_input "min_devices above devices" "$T/r1.yaml" "r1.yaml:29:67: jobs[1].min_devices: 5 is above devices (4)"
sed 's/devices: 4, set/devices: 4, max_devices: 9, set/' "$T/a.yaml" >"$T/r2.yaml"
bad_input "max_devices beyond the world" "$T/r2.yaml" "r2.yaml:29:67: jobs[1].max_devices: 9, but the world has 4 devices"
sed 's/devices: 4, set/devices: 4, efficiency: { noise_scale: 9 }, set/' "$T/a.yaml" >"$T/r3.yaml"
bad_input "efficiency without M0" "$T/r3.yaml" "r3.yaml:29:66: jobs[1].efficiency: reference_batch is required"
sed 's/^scheduler: .*$/scheduler: { name: fifo, train_to: accuracy }/' "$T/a.yaml" >"$T/r5.yaml"
bad_input "train_to" "$T/r5.yaml" "r5.yaml:26:36: scheduler.train_to: expected epochs or progress (got accuracy)"
sed 's/devices: 4, set/devices: 4, weight: 0, set/' "$T/a.yaml" >"$T/r4.yaml"
bad_input "weight 0" "$T/r4.yaml" "r4.yaml:29:62: jobs[1].weight: must be > 0"

# the arrival rate scaled
expect 0 "arrival_scale" -- "$BIN" jobs "$S" --no-db --set scheduler.arrival_scale=4
has "$T/out" "b                ddp           4       4      4.000"

# sweeps of jobs: scheduler x arrival rate, the same rows whatever --jobs,
# resumable, drawn by plot jobs-sweep
V="--vary scheduler=fifo,srf,pollux --vary scheduler.arrival_scale=0.5,1,2"
expect 0 "sweep of jobs, --jobs 1" -- "$BIN" sweep "$S" $V --jobs 1 --db "$T/sw1.db"
has "$T/out" "sweep #1: 9 jobs runs stored now, 0 before, 0 not stored"
has "$T/out" '{"scheduler":"pollux","scheduler.arrival_scale":"2"} pollux'
expect 0 "sweep of jobs, --jobs 3" -- "$BIN" sweep "$S" $V --jobs 3 --db "$T/sw3.db" -q
rows() { sqlite3 "$1" "SELECT s.spec_json, r.point_json, r.scheduler, r.seed, r.makespan_s, r.jct_mean_s, r.jct_p95_s,
    r.jain, r.events, (SELECT group_concat(j.end_s) FROM jobs j WHERE j.jobs_run_id = r.id)
    FROM jobs_runs r JOIN sweeps s ON s.id = r.sweep_id ORDER BY r.point_json, r.scheduler"; }
[ "$(rows "$T/sw1.db")" = "$(rows "$T/sw3.db")" ] && [ "$(rows "$T/sw1.db" | wc -l)" = 9 ] &&
    ok "jobs sweep rows the same whatever --jobs" || bad "jobs sweep rows differ between --jobs 1 and 3"
expect 0 "jobs sweep point = dpsim jobs" -- "$BIN" jobs "$S" -S srf --set scheduler.arrival_scale=2 --no-db --json
cat >"$T/pt.py" <<'PY'
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))['runs'][0]
c = sqlite3.connect(sys.argv[2])
m, p = c.execute("SELECT jct_mean_s, jct_p95_s FROM jobs_runs WHERE point_json = ?",
                 ('{"scheduler":"srf","scheduler.arrival_scale":"2"}',)).fetchone()
assert (m, p) == (d['jct_mean_s'], d['jct_p95_s']), (m, p, d)
PY
python3 "$T/pt.py" "$T/out" "$T/sw1.db" && ok "a point is its dpsim jobs run" || bad "sweep point differs from dpsim jobs"
expect 0 "jobs sweep resumes" -- "$BIN" sweep "$S" $V --jobs 2 --db "$T/sw1.db"
has "$T/out" "sweep #1: 0 jobs runs stored now, 9 before, 0 not stored"
[ "$(sqlite3 "$T/sw1.db" 'SELECT count(*) FROM jobs_runs')" = 9 ] && ok "nothing run twice" || bad "resume duplicated runs"
expect 0 "merge a jobs sweep" -- "$BIN" merge "$T/swm.db" "$T/sw1.db"
[ "$(rows "$T/swm.db")" = "$(rows "$T/sw1.db")" ] && ok "merge keeps the sweep and points" || bad "merged jobs sweep differs"
if command -v gnuplot >/dev/null; then
    expect 0 "plot jobs-sweep" -- "$BIN" plot jobs-sweep --db "$T/sw1.db" --out "$T/js.png"
    [ -s "$T/js.png" ] && ok "jobs-sweep.png drawn" || bad "no jobs-sweep png"
    expect 2 "plot jobs-sweep without a sweep" -- "$BIN" plot jobs-sweep --db "$T/j.db" --out "$T/js2.png"
    has "$T/err" "no sweep of jobs in the database"
fi
bad_sweep() { # NAME WANT ARGS...
    local name=$1 want=$2
    shift 2
    expect 2 "$name" -- "$BIN" sweep "$S" "$@" --db "$T/swbad.db"
    has "$T/err" "$want"
    [ ! -e "$T/swbad.db" ] && ok "$name: nothing stored" || { bad "$name: a database was written"; rm -f "$T/swbad.db"; }
}
bad_sweep "sweep: unknown scheduler" "--vary scheduler=fifo,lass: value 'lass': unknown scheduler" --vary scheduler=fifo,lass
bad_sweep "sweep: static on counts" "value 'static': static needs every job's groups" --vary scheduler=static
bad_sweep "sweep: bad arrival_scale" "value '0': override scheduler.arrival_scale=0" --vary scheduler.arrival_scale=0,1
bad_sweep "sweep of jobs: --policy" "a sweep of jobs takes no --policy" --vary scheduler.arrival_scale=1 -p ddp

# inside jobs (31b): a job with learning: gives its times to accuracy in the
# table, the JSON and the database; a localsgd job its policy's statistics;
# merge and export carry both
sed '/^jobs:/,$d' "$T/a.yaml" >"$T/learn.yaml"
cat >>"$T/learn.yaml" <<'YAML'
jobs:
  - { name: a, arrival: 0s, policy: ddp, devices: 2 }
  - { name: l, arrival: 1s, policy: localsgd, devices: 2,
      set: { dataset.samples: 1437, model.params: 650 },
      learning: { data: digits, model: softmax, targets: [0.5, 0.8] } }
YAML
expect 0 "a job learns" -- "$BIN" jobs "$T/learn.yaml" --db "$T/l.db"
has "$T/out" "learning (times to accuracy from each job's arrival):"
has "$T/out" " 0.5: "
expect 0 "a job learns, JSON" -- "$BIN" jobs "$T/learn.yaml" --no-db --json
python3 -c "
import json; j = json.load(open('$T/out'))['runs'][0]['jobs']
assert 'learning' not in j[0] and 'stats' not in j[0]
l = j[1]['learning']; t = [x['target'] for x in l['time_to_accuracy']]
assert t == [0.5, 0.8] and 0 < l['time_to_accuracy'][0]['t_s'] <= l['time_to_accuracy'][1]['t_s'], l
assert l['final_acc'] > 0.8 and any(s['name'] == 'rounds' and s['run'] == 0 for s in j[1]['stats'])" &&
    ok "JSON learning and stats" || bad "JSON learning and stats"
[ "$(sqlite3 "$T/l.db" 'SELECT count(*) FROM job_tta WHERE job = 1 AND tta_s > 0')" = 2 ] &&
    [ "$(sqlite3 "$T/l.db" 'SELECT count(*) FROM jobs WHERE final_acc IS NOT NULL')" = 1 ] &&
    [ "$(sqlite3 "$T/l.db" "SELECT count(*) FROM job_stats WHERE job = 1 AND name = 'rounds'")" = 1 ] &&
    ok "job_tta, job_stats, final_acc stored" || bad "learning or statistics rows"
lq() { sqlite3 "$1" "CREATE TEMP VIEW r AS SELECT id FROM jobs_runs WHERE n_jobs = 2;
    SELECT group_concat(job || ':' || seq || ':' || target || ':' || tta_s) FROM job_tta WHERE jobs_run_id IN r;
    SELECT count(*), sum(value) FROM job_stats WHERE jobs_run_id IN r;
    SELECT group_concat(final_acc) FROM jobs WHERE jobs_run_id IN r;" | tr '\n' ' '; }
expect 0 "merge learning jobs" -- "$BIN" merge "$T/m.db" "$T/l.db"
[ "$(lq "$T/m.db")" = "$(lq "$T/l.db")" ] && ok "merge carries job_tta and job_stats" ||
    bad "merged: $(lq "$T/m.db") vs $(lq "$T/l.db")"
# dpsim show jN gives the learning and the statistics back (show --json: the run's own document)
expect 0 "a job learns, JSON stored" -- "$BIN" jobs "$T/learn.yaml" --db "$T/ls.db" --json
cp "$T/out" "$T/ls-run.json"
expect 0 "show the learning jobs run" -- "$BIN" show j1 --db "$T/ls.db" --json
python3 -c "
import json; a = json.load(open('$T/ls-run.json'))['runs'][0]; b = json.load(open('$T/out'))['runs'][0]
assert a == b and 'learning' in b['jobs'][1] and 'stats' in b['jobs'][1]" &&
    ok "show jN: learning and stats as run" || bad "show jN differs from the run"
expect 0 "export learning jobs" -- "$BIN" export --csv --db "$T/l.db" --out "$T/lcsv/"
[ -s "$T/lcsv/job_tta.csv" ] && [ -s "$T/lcsv/job_stats.csv" ] && ok "job_tta, job_stats exported" ||
    bad "job_tta or job_stats CSV missing"

# the world's --set reaches every job (a job's scenario is the world's text
# loaded again, with the world's overrides before its own settings)
expect 0 "--set reaches the jobs" -- "$BIN" jobs "$S" --no-db -s training.epochs=1
has "$T/out" "a                ddp           2       2      0.000      0.000      3.713"
# device failures inside jobs: the world's (seeded by world device), the same
# bits twice; each job's failures and restarts among its statistics
F=(--set 'devices.gpu.availability={mtbf: 20s, mttr: 3s}' --set policies.ddp.timeout=2s)
expect 0 "failures inside jobs" -- "$BIN" jobs "$S" -S fifo,srf --no-db --json "${F[@]}"
cp "$T/out" "$T/f1.json"
expect 0 "failures inside jobs again" -- "$BIN" jobs "$S" -S fifo,srf --no-db --json "${F[@]}"
cmp -s "$T/out" "$T/f1.json" && ok "failures inside jobs: deterministic" || bad "failures: two runs differ"
python3 -c "
import json; r = json.load(open('$T/f1.json'))['runs']
f = [s['value'] for x in r for j in x['jobs'] for s in j.get('stats', []) if s['name'] == 'failures']
assert sum(f) > 0, f" && ok "failures counted per job" || bad "no job saw a failure"
sed 's/- { name: a, arrival: 0s, policy: ddp, devices: 2 }/- { name: a, arrival: 0s, policy: ddp, devices: 2, set: { devices.gpu.availability: { mtbf: 1h, mttr: 1min } } }/' \
    "$T/learn.yaml" >"$T/avail.yaml"
# pollux in a failing world: a job that loses a device is re-sized onto
# devices up (counted as a pre-emption, its run's failure among its
# statistics); the same bits twice
expect 0 "pollux with failures" -- "$BIN" jobs "$S" -S pollux --no-db --json "${F[@]}"
cp "$T/out" "$T/pf1.json"
expect 0 "pollux with failures again" -- "$BIN" jobs "$S" -S pollux --no-db --json "${F[@]}"
cmp -s "$T/out" "$T/pf1.json" && ok "pollux with failures: deterministic" || bad "pollux with failures: two runs differ"
python3 -c "
import json; r = json.load(open('$T/pf1.json'))['runs'][0]
f = [s['value'] for j in r['jobs'] for s in j.get('stats', []) if s['name'] == 'failures']
assert sum(f) > 0 and sum(j['preemptions'] for j in r['jobs']) > 0, (f, [j['preemptions'] for j in r['jobs']])" &&
    ok "pollux re-sizes a job that loses a device" || bad "pollux with failures: no failure or re-size"
# a world failing faster than a job gets through an epoch: pollux would
# re-size it for ever; after 100 re-sizes from one epoch the run fails (exit
# 1), as a single run does after max_restarts
expect 1 "pollux, no progress" -- "$BIN" jobs "$S" -S pollux --no-db -q \
    --set 'devices.gpu.availability={mtbf: 0.5s, mttr: 0.1s}' --set policies.ddp.timeout=2s
has "$T/err" "no progress: 100 re-sizes after failures since epoch 0"
bad_input "a job may not change the failures" "$T/avail.yaml" \
    "avail.yaml:28:5: jobs[0] (a): a job may not change the world's device failures (availability)"

e2e_done e2e_jobs
