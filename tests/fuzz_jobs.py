#!/usr/bin/env python3
"""fuzz_jobs.py: a mutation fuzz pass over `dpsim jobs` (a benchmark, not
part of the test suite: `meson test -C build-asan --benchmark fuzz_jobs` in
a sanitizer build, or run it by hand).  The single-run side is
fuzz_scenarios.py; this one covers what only many jobs read: the `jobs:`
list (arrivals, devices, groups, ranges, weights, efficiencies, per-job
settings), job traces in both shapes (Pollux's and dpsim's), the scheduler
mapping (every scheduler, interval, restart, train_to) and the shared
world's failures and learning.

Each case is a small world (five devices in two groups, a few hundred
samples) and a few jobs, or a trace of a few jobs of the Pollux
applications.  Most cases are valid; about a third get hostile values (a
number swapped for an extreme or a wrong type, a job claiming more devices
than exist, unknown names, bytes inserted into a trace).  Each runs as
`dpsim jobs CASE --no-db -q --json` (sometimes with -S) under a timeout and
is counted as

  completed   exit 0 with JSON on stdout that parses
  rejected    exit 2 with a message on stderr
  failed      exit 1 with a message
  crashes     a signal, a sanitizer report, another exit code, exit 0 with
              output that does not parse, or exit 1/2 without a message
  timeouts    still running after the timeout (then killed: a case may be
              a legitimately long run under a sanitizer, e.g. a trace job
              of a real-sized application, or decisions every millisecond
              over hours of a failing world; replay it in a release build)

Crashes and timeouts are kept in FUZZ_OUT for triage; case i of seed S is
the same files on every machine (`--only I` replays one).

Env: DPSIM_BIN, FUZZ_CASES (default 1000), FUZZ_SEED (1), FUZZ_TIMEOUT
(seconds per run, default 60), FUZZ_JOBS (parallel runs, 2), FUZZ_OUT
(./fuzz-jobs-findings).
"""
import concurrent.futures
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

BIN = os.environ.get("DPSIM_BIN") or sys.exit("fuzz_jobs: set DPSIM_BIN to the dpsim binary")
CASES = int(os.environ.get("FUZZ_CASES", "1000"))
SEED = int(os.environ.get("FUZZ_SEED", "1"))
TIMEOUT = float(os.environ.get("FUZZ_TIMEOUT", "60"))
JOBS = int(os.environ.get("FUZZ_JOBS", "2"))
OUT = os.path.abspath(os.environ.get("FUZZ_OUT", "fuzz-jobs-findings"))

SAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:exitcode=86",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:exitcode=87",
}
SAN_CODES = {86, 87}
SAN_TEXT = re.compile(r"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:")

WORLD = """name: fuzz-jobs
model: {{ params: 200000, flops_per_sample: 5e7 }}
dataset: {{ samples: 300, sample_bytes: 10KB }}
training: {{ epochs: {epochs} }}
server: {{ nic: {{ up: 100Mbps, down: 100Mbps }} }}
devices:
  - {{ name: g, count: 3, kind: gpu, memory: 1GiB, batch: 16, batch_time: 30ms,
      link: {{ up: 100Mbps, down: 70Mbps, latency: 1ms }} }}
  - {{ name: c, count: 2, kind: cpu, memory: 1GiB, batch: 8, peak_flops: 20GFLOPS, efficiency: 0.5,
      link: {{ up: 20Mbps, down: 50Mbps, latency: 4ms }} }}
{extra}
scheduler: {sched}
jobs: {jobs}
"""
HOSTILE = ["0", "-1", "1e308", "nan", "inf", '""', "[]", "{}", "1e-9", "abc", "99999999999", "-0", "1e9s"]
POLICIES = ["ddp", "cadp", "localsgd", "asyncps", "deepspeed", "lbbsp", "dlb"]
SCHEDULERS = ["fifo", "srf", "las", "themis", "pollux", "static"]
APPS = ["cifar10", "ncf", "bert", "yolov3", "imagenet", "deepspeech2"]


def yaml_job(r, i, hostile):
    kv = {"name": "j%d" % i, "arrival": "%gs" % r.choice([0, 0, 1, 2.5, 7.3, 100]),
          "policy": r.choice(POLICIES + (["fedavg", "nope"] if hostile else []))}
    if not hostile or r.random() < 0.8:
        kv["devices"] = str(r.choice([1, 2, 3] + ([0, -1, 6, 100] if hostile else [])))
    else:
        kv["groups"] = r.choice(["[g]", "[c]", "[g, c]", "[x]", "[]"])
    for k in ["weight", "min_devices", "max_devices"]:
        if r.random() < 0.2:
            kv[k] = r.choice(["1", "2", "4"] + (HOSTILE if hostile else []))
    if r.random() < 0.25:
        kv["efficiency"] = r.choice(
            ["{ reference_batch: 16, noise_scale: 100 }", "{ reference_batch: 8, noise_scale: [5, 50, 500] }"] +
            (["{ reference_batch: 0, noise_scale: 1 }", "{ reference_batch: 16, noise_scale: [1, -3] }",
              "{ reference_batch: 16, noise_trace: nofile.csv }", "{ reference_batch: 16 }",
              "{ reference_batch: 1e12, noise_scale: 1e308 }"] if hostile else []))
    if hostile and r.random() < 0.3:
        kv["set"] = r.choice(["{ training.epochs: %s }" % r.choice(HOSTILE), "{ policies.ddp.collective: flows }",
                              "{ dataset.samples: %s }" % r.choice(HOSTILE), "{ availability: { mtbf: 10s } }",
                              "{ devices.g.batch: %s }" % r.choice(HOSTILE), "{ nonsense.key: 1 }"])
    if hostile and r.random() < 0.15:
        kv[r.choice(list(kv))] = r.choice(HOSTILE)
    return "  - { " + ", ".join("%s: %s" % kv_ for kv_ in kv.items()) + " }"


def trace(r, hostile):
    odd = lambda p: hostile and r.random() < p
    if r.random() < 0.5:  # Pollux's shape
        rows, t = ["name,time,application,num_replicas,batch_size"], 0
        for i in range(r.randint(0 if hostile else 1, 6)):
            t += r.choice([0, 1, 5]) if not odd(0.1) else -3
            rows.append("j%d,%s,%s,%s,%s" % (i, t if not odd(0.1) else r.choice(["nan", "1e300", "x"]),
                                            r.choice(APPS + (["zz"] if hostile else [])),
                                            r.choice(["1", "2", "5"]) if not odd(0.1) else r.choice(["0", "9", "-2"]),
                                            r.choice(["8", "64", "128"]) if not odd(0.1) else r.choice(["0", "-5"])))
    else:  # dpsim's
        pol = r.random() < 0.3
        rows = ["name,arrival,application,epochs,devices,batch" + (",policy" if pol else "")]
        for i in range(r.randint(0 if hostile else 1, 6)):
            row = "j%d,%s,%s,%s,%s,%s" % (i, r.choice(["0s", "1s", "2min"]), r.choice(APPS), r.choice(["1", "2"]),
                                          r.choice(["1", "2", "3"]), r.choice(["8", "16"]))
            rows.append(row + ("," + r.choice(POLICIES) if pol else ""))
    text = "\n".join(rows) + "\n"
    if odd(0.2):
        b = list(text)
        b.insert(r.randrange(len(b)), r.choice([",", "\n", '"', "\x00", "\xff", "#"]))
        text = "".join(b)
    return text


def make_case(i, d):
    r = random.Random(SEED * 1000003 + i)
    hostile = r.random() < 0.3
    sched = r.choice(SCHEDULERS[:5]) if r.random() < 0.5 else \
        "{ name: %s, interval: %s, restart: %s, train_to: %s }" % (
            r.choice(SCHEDULERS + (["nope"] if hostile else [])),
            r.choice(["0s", "1s", "0.1s", "2s"] + (["0.001s"] if hostile else [])),
            r.choice(["0s", "0.5s", "1s"]), r.choice(["epochs", "progress"] + (["x"] if hostile else [])))
    extra = r.choice(["", "", "availability: { mtbf: 20s, mttr: 5s }", "learning: { data: digits }"])
    if r.random() < 0.25:  # the applications are real-sized: trace jobs are the slow cases
        with open(os.path.join(d, "t.csv"), "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(trace(r, hostile))
        jobs = "t.csv"
    else:
        jobs = "\n" + "\n".join(yaml_job(r, k, hostile) for k in range(r.randint(1, 4)))
    with open(os.path.join(d, "case.yaml"), "w") as f:
        f.write(WORLD.format(epochs=r.choice([1, 2, 3]), extra=extra, sched=sched, jobs=jobs))
    args = [BIN, "jobs", os.path.join(d, "case.yaml"), "--no-db", "-q", "--json"]
    if r.random() < 0.3:
        args += ["-S", r.choice(SCHEDULERS + ["all"])]
    return args


def run_case(i):
    d = tempfile.mkdtemp(prefix="fuzz-jobs-%d-" % i)
    args = make_case(i, d)
    try:
        p = subprocess.run(args, capture_output=True, timeout=TIMEOUT, env=dict(os.environ, **SAN_ENV))
    except subprocess.TimeoutExpired:
        return i, "timeouts", d, args, ""
    err = p.stderr.decode("utf-8", "replace")
    rc = p.returncode
    if rc < 0 or rc in SAN_CODES or SAN_TEXT.search(err) or rc not in (0, 1, 2) or (rc and not err.strip()):
        kind = "crashes"
    elif rc == 0:
        try:
            json.loads(p.stdout)
            kind = "completed"
        except ValueError:
            kind = "crashes"
    else:
        kind = "rejected" if rc == 2 else "failed"
    return i, kind, d, args, err


def main():
    only = [int(sys.argv[sys.argv.index("--only") + 1])] if "--only" in sys.argv else range(CASES)
    counts = {k: 0 for k in ["completed", "rejected", "failed", "crashes", "timeouts"]}
    with concurrent.futures.ThreadPoolExecutor(JOBS) as pool:
        for i, kind, d, args, err in pool.map(run_case, only):
            counts[kind] += 1
            if kind in ("crashes", "timeouts"):
                keep = os.path.join(OUT, "case-%d" % i)
                shutil.rmtree(keep, ignore_errors=True)
                shutil.copytree(d, keep)
                with open(os.path.join(keep, "command"), "w") as f:
                    f.write(" ".join(a.replace(d, keep) for a in args) + "\n" + err[-4000:])
                print("fuzz_jobs: case %d: %s (kept in %s)" % (i, kind, keep), flush=True)
            shutil.rmtree(d, ignore_errors=True)
    print("fuzz_jobs: %d cases, seed %d: %s" % (len(only), SEED, ", ".join("%s %d" % kv for kv in counts.items())))
    return 1 if counts["crashes"] else 0


if __name__ == "__main__":
    sys.exit(main())
