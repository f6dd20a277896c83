#!/usr/bin/env python3
"""fuzz_scenarios.py: a mutation fuzz pass over whole runs (a benchmark, not
part of the test suite: `meson test -C build-asan --benchmark fuzz_scenarios`
in a sanitizer build, or run it by hand).

Each case is a small random scenario (2-5 device groups, a few hundred
samples, 1-3 epochs: a run takes milliseconds) over the whole scenario
language, the dynamic world included: availability (mtbf/mttr and trace
files), stragglers, speed and link traces (CSV and mahimahi), link and WAN
outages, sites, noise, batch tables, populations.  It is then mutated: most
cases get semantic mutations (a value swapped for an extreme or a wrong
type, a key dropped or duplicated), the rest byte-level ones (a line dropped,
duplicated or cut, junk inserted).  Each runs one policy (the policies
cycle, so every one gets its share) as `dpsim run CASE -p POLICY --no-db -q
--json` under a per-run timeout, and is counted as

  completed   exit 0 with JSON on stdout that parses
  rejected    exit 2 with a message on stderr
  failed      exit 1 with a message (the run failed: a stall, no progress)
  crashes     a signal, a sanitizer report, another exit code, exit 0 with
              output that does not parse, or exit 1/2 without a message
  timeouts    still running after the timeout (then killed)

Crashes and timeouts are kept in FUZZ_OUT (with the command) for triage.
Everything is seeded: case i of seed S is the same file on every machine,
so `--only I` replays one.

Env: DPSIM_BIN (the binary; a sanitizer build is what makes crashes
visible), FUZZ_CASES (default 5000), FUZZ_SEED (1), FUZZ_TIMEOUT (seconds
per run, default 10), FUZZ_JOBS (parallel runs, default 2), FUZZ_OUT
(default ./fuzz-findings).
"""
import concurrent.futures
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BIN = os.environ.get("DPSIM_BIN") or sys.exit("fuzz_scenarios: set DPSIM_BIN to the dpsim binary")
CASES = int(os.environ.get("FUZZ_CASES", "5000"))
SEED = int(os.environ.get("FUZZ_SEED", "1"))
TIMEOUT = float(os.environ.get("FUZZ_TIMEOUT", "10"))
JOBS = int(os.environ.get("FUZZ_JOBS", "2"))
OUT = os.path.abspath(os.environ.get("FUZZ_OUT", "fuzz-findings"))

SAN_ENV = {
    # A sanitizer report gets its own exit code, so it is never taken for
    # dpsim's own exit 1.
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:exitcode=86",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:exitcode=87",
}
SAN_CODES = {86, 87}
SAN_TEXT = re.compile(r"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:")


def policies():
    """The policy names from `dpsim run --help` (its Policies section)."""
    text = subprocess.run([BIN, "run", "--help"], capture_output=True, text=True).stdout
    names, inside = [], False
    for line in text.splitlines():
        if line.startswith("Policies"):
            inside = True
            continue
        m = re.match(r"^  ([a-z0-9_]+) ", line)
        if inside and m:
            names.append(m.group(1))
    if not names:
        sys.exit("fuzz_scenarios: no policies in `dpsim run --help`")
    return names


# ---- random scenarios -------------------------------------------------------

def bw(r):
    return r.choice(["1Mbps", "20Mbps", "100Mbps", "1Gbps", "10Gbps", "500kbps"])


def dur(r, lo, hi):
    return "%.3gs" % r.uniform(lo, hi)


def csv_trace(r, d, name, kind):
    """A trace file: a CSV time_s,value (bits/s for links, a factor for
    speed, 0/1 for availability) or a mahimahi file.  Its name relative to
    the case's directory, so that a kept case runs where it is kept."""
    path = os.path.join(d, name)
    with open(path, "w") as f:
        if kind == "mahimahi":
            t = 0
            for _ in range(r.randint(1, 60)):
                t += r.choice([0, 1, 1, 2, 5, 20])
                f.write("%d\n" % t)
            if t == 0:
                f.write("10\n")
            return name
        if r.random() < 0.7:
            f.write("time_s,value\n")
        t = 0.0
        for i in range(r.randint(1, 8)):
            if kind == "up":
                v = (i + r.randint(0, 1)) % 2 if i else 1
                f.write("%g,%d\n" % (t, v))
            elif kind == "speed":
                f.write("%g,%g\n" % (t, r.choice([0.25, 0.5, 1, 1.5, 2])))
            else:
                f.write("%g,%g\n" % (t, r.choice([0, 1e6, 5e6, 2e7, 1e8]) if i else r.choice([1e6, 2e7])))
            t += r.choice([0.5, 1, 2, 5, 30])
    return name


def trace_ref(r, d, name, kind):
    if kind != "up" and r.random() < 0.25:
        p = csv_trace(r, d, name + ".up", "mahimahi")
        return {"file": p, "format": "mahimahi", "bin": r.choice(["10ms", "100ms", "1s"])}
    p = csv_trace(r, d, name + ".csv", kind)
    if r.random() < 0.5:
        return p
    ref = {"file": p, "loop": r.choice(["true", "false"])}
    if kind == "link" and r.random() < 0.5:
        ref["mean"] = bw(r)
    if kind == "speed" and r.random() < 0.5:
        ref["mean"] = r.choice([0.5, 1, 2])
    return ref


def outages(r):
    t, out = 0.0, []
    for _ in range(r.randint(1, 3)):
        a = t + r.uniform(0.1, 5)
        b = a + r.uniform(0.05, 3)
        out.append(["%.3gs" % a, "%.3gs" % b])
        t = b
    return out


def availability(r, d, name):
    if r.random() < 0.3:
        a = {"trace": trace_ref(r, d, name + "-avail", "up")}
    else:
        a = {"mtbf": dur(r, 1, 60), "mttr": dur(r, 0.2, 10)}
    if r.random() < 0.3:
        a["data_persists"] = r.choice(["true", "false"])
    return a


def device(r, d, i, sites):
    g = {"name": "g%d" % i, "kind": r.choice(["gpu", "cpu"]), "memory": r.choice(["1GiB", "8GiB", "256MiB"])}
    if r.random() < 0.6:
        g["count"] = r.randint(1, 3)
    g["batch"] = r.choice([1, 2, 4, 8, 16])
    model = r.random()
    if model < 0.5:
        g["batch_time"] = r.choice(["5ms", "20ms", "100ms", "1s"])
    elif model < 0.75:
        g["batch_table"] = [[1, 0.01], [8, 0.05], [32, r.choice([0.1, 0.2])]]
    else:
        g["peak_flops"] = r.choice(["1GFLOPS", "10GFLOPS", "1TFLOPS"])
        g["efficiency"] = r.choice([0.1, 0.5, 1])
        if r.random() < 0.5:
            g["overhead"] = "1ms"
    if r.random() < 0.2:
        g["noise"] = r.choice([0.05, 0.3, 1])
    if r.random() < 0.2:
        g["speed_trace"] = trace_ref(r, d, "speed%d" % i, "speed")
    if r.random() < 0.3:
        g["stragglers"] = {"every": dur(r, 0.5, 30), "lasting": dur(r, 0.1, 5), "factor": r.choice([1, 2, 4, 10])}
    if r.random() < 0.25:
        g["availability"] = availability(r, d, "g%d" % i)
    if sites:
        g["site"] = r.choice(sites)
    link = {}
    for k in ("up", "down"):
        if r.random() < 0.15:
            link[k + "_trace"] = trace_ref(r, d, "%s%d" % (k, i), "link")
        else:
            link[k] = bw(r)
    if r.random() < 0.5:
        link["latency"] = r.choice(["0ms", "1ms", "50ms"])
    if r.random() < 0.2:
        link["outages"] = outages(r)
    g["link"] = link
    return g


POLICY_OPTS = {
    "ddp": lambda r: {"collective": r.choice(["flows", "analytic"]), "overlap": r.choice(["true", "false"]),
                      "on_failure": r.choice(["wait", "elastic"]), "timeout": r.choice(["1s", "30s"]),
                      "checkpoint_write": "0.5s", "bucket": r.choice(["1MiB", "25MiB"])},
    "deepspeed": lambda r: {"stage": r.randint(1, 3), "grad_accum": r.randint(1, 3),
                            "collective": r.choice(["flows", "analytic"]), "timeout": "2s"},
    "cadp": lambda r: {"solver": r.choice(["exact", "alm", "simulate"]),
                       "rounding": r.choice(["batch", "largest_remainder"]),
                       "exclude_slow": r.choice(["true", "false"])},
    "equal_finish": lambda r: {"global_batch": r.choice([0, 8, 64]), "data": r.choice(["replicate", "shard"])},
    "dlb": lambda r: {"global_batch": r.choice([0, 16]), "on_failure": r.choice(["wait", "elastic"])},
    "lbbsp": lambda r: {"alpha": r.choice([0.1, 0.5, 1]), "collective": r.choice(["flows", "analytic"])},
    "lbb": lambda r: {"threshold": r.choice([0, 0.05, 1]), "window": r.randint(1, 10), "quantum": r.randint(1, 5)},
    "localsgd": lambda r: {"steps": r.choice([0, 1, 4, 16]), "sync": r.choice(["ring", "server"]),
                           "allocation": r.choice(["equal", "cadp"]), "batch_growth": r.choice([1, 2])},
    "flsgd": lambda r: {"steps": r.choice([1, 4]), "sync": r.choice(["ring", "server"])},
    "asyncps": lambda r: {"max_staleness": r.choice([-1, 0, 2])},
    "hierarchical": lambda r: {"steps": r.choice([0, 2, 8]), "wan": r.choice(["ring", "server"])},
}


def scenario(r, d, policy):
    s = {"name": "fuzz",
         "model": {"name": "m", "params": r.choice([1, 1000, 250000, 2e6]), "flops_per_sample": 1e6},
         "dataset": {"name": "d", "samples": r.choice([64, 400, 1000]), "sample_bytes": r.choice(["1B", "3KB"])},
         "training": {"epochs": r.randint(1, 3), "seed": r.randint(0, 1000)}}
    if r.random() < 0.6:
        s["server"] = {"nic": {"up": bw(r), "down": bw(r)}}
        if r.random() < 0.5:
            s["server"]["aggregate_rate"] = r.choice(["1GB/s", "10MB/s"])
    sites = []
    if r.random() < 0.35 or policy == "hierarchical":
        sites = ["s%d" % k for k in range(r.randint(2, 3))]
        s["sites"] = sites
        wan = []
        for a in range(len(sites)):
            for b in range(a + 1, len(sites)):
                if r.random() < 0.8:
                    w = {"between": [sites[a], sites[b]], "latency": r.choice(["1ms", "40ms"])}
                    if r.random() < 0.2:
                        w["trace"] = trace_ref(r, d, "wan%d%d" % (a, b), "link")
                    else:
                        w["bandwidth"] = bw(r)
                    if r.random() < 0.2:
                        w["outages"] = outages(r)
                    wan.append(w)
        if wan:
            s["wan"] = wan
    if r.random() < 0.2:
        s["availability"] = availability(r, d, "top")
    if r.random() < 0.1:
        s["interconnect"] = {"bandwidth": bw(r), "latency": "1us"}
    s["devices"] = [device(r, d, i, sites) for i in range(r.randint(2, 5))]
    if r.random() < 0.1:  # a device table
        p = os.path.join(d, "table.csv")
        with open(p, "w") as f:
            f.write("name,kind,memory,batch,batch_time,link.up,link.down\n")
            for k in range(r.randint(1, 3)):
                f.write("t%d,gpu,1GiB,%d,%s,%s,%s\n" % (k, r.choice([1, 4]), "10ms", bw(r), bw(r)))
        s["devices"].append({"from_csv": "table.csv"})
    if r.random() < 0.8:
        s["policies"] = {policy: POLICY_OPTS.get(policy, lambda r: {})(r)}
    return s


# ---- mutations --------------------------------------------------------------

EXTREMES = [0, -1, 1, 2 ** 31, 2 ** 31 - 1, 2 ** 32 + 1, 2 ** 63, 1e15, 1e300, 1e-300, 5e-324, "nan", "inf",
            "-inf", "0x10", "1e", "", "~", "null", "[]", "{}", "[1, 2]", "{a: 1}", "yes", "0s", "1e9s", "1e-9s",
            "1e12s", "0bps", "1bps", "1e15bps", "-1ms", "1ns", "100000000000000000000", "\"\\x1b[31m\"",
            "'$(id)'", "&a", "*a", "!!binary aGk=", "1GiB", "1e9", "3min", "1h", "NaNs", "10 %", "1/0"]


def paths(v, prefix=()):
    yield prefix
    if isinstance(v, dict):
        for k, x in v.items():
            yield from paths(x, prefix + (k,))
    elif isinstance(v, list):
        for k, x in enumerate(v):
            yield from paths(x, prefix + (k,))


def get_at(v, p):
    for k in p:
        v = v[k]
    return v


def mutate_tree(r, s):
    for _ in range(r.randint(1, 3)):
        ps = [p for p in paths(s) if p]
        p = r.choice(ps)
        parent = get_at(s, p[:-1])
        op = r.random()
        if op < 0.55:
            old = parent[p[-1]]
            if isinstance(old, (int, float)) and not isinstance(old, bool) and r.random() < 0.5:
                parent[p[-1]] = old * r.choice([0, -1, 1e3, 1e6, 1e9, 1e-6, 2 ** 31])
            else:
                parent[p[-1]] = r.choice(EXTREMES)
        elif op < 0.75:
            if isinstance(parent, dict):
                del parent[p[-1]]
            elif len(parent) > 1:
                parent.pop(p[-1])
        elif op < 0.9 and isinstance(parent, list):
            parent.append(json.loads(json.dumps(parent[p[-1]])))
        else:  # an unknown or misplaced key
            if isinstance(parent, dict):
                parent[r.choice(["bogus", "stragglers", "availability", "outages", "count", "trace"])] = \
                    r.choice(EXTREMES[:12])
    return s


def to_yaml(v, ind=0):
    """Block YAML; strings from EXTREMES go in raw (they are meant to be
    read as YAML, flow lists and tags included)."""
    sp = "  " * ind
    if isinstance(v, dict):
        if not v:
            return " {}\n"
        out = "\n"
        for k, x in v.items():
            out += "%s%s:%s" % (sp, k, to_yaml(x, ind + 1))
        return out
    if isinstance(v, list):
        if not v:
            return " []\n"
        if all(not isinstance(x, (dict, list)) for x in v):
            return " [" + ", ".join(scalar(x) for x in v) + "]\n"
        out = "\n"
        for x in v:
            body = to_yaml(x, ind + 1)
            out += "%s-%s" % (sp, body if not body.startswith("\n") else "\n" + body[1:])
        return out
    return " " + scalar(v) + "\n"


def scalar(x):
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return repr(x)
    return str(x)


def mutate_text(r, text):
    lines = text.split("\n")
    for _ in range(r.randint(1, 4)):
        i = r.randrange(len(lines))
        op = r.random()
        if op < 0.25:
            lines.pop(i)
        elif op < 0.45:
            lines.insert(i, lines[i])
        elif op < 0.6:
            lines[i] = lines[i][: r.randrange(len(lines[i]) + 1)]
        elif op < 0.8:
            j = r.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:j] + r.choice(["{", "[", ":", "- ", "&x ", "*x", "\t", "'", "\"", "#", "\x1b",
                                                "\x00", "\xff", "%", "!!str ", "? "]) + lines[i][j:]
        else:
            lines[i] = re.sub(r"\d+", lambda m: r.choice(["0", "-1", "99999999999999999999", "1e308", m.group(0) * 3]),
                              lines[i], count=1)
        if not lines:
            lines = [""]
    return "\n".join(lines)


def make_case(i, pols, d):
    r = random.Random(SEED * 1000003 + i)
    pol = pols[i % len(pols)]
    s = scenario(r, d, pol)
    kind = r.random()
    if kind < 0.35:
        text = to_yaml(s).lstrip("\n")  # unmutated: a valid run of the dynamic world
    elif kind < 0.8:
        text = to_yaml(mutate_tree(r, s)).lstrip("\n")
    else:
        text = mutate_text(r, to_yaml(s).lstrip("\n"))
    path = os.path.join(d, "case.yaml")
    with open(path, "wb") as f:
        f.write(text.encode("utf-8", "surrogateescape"))
    return path, pol


# ---- running ----------------------------------------------------------------

def run_case(i, pols):
    d = tempfile.mkdtemp(prefix="dpsim-fuzz-%d-" % i)
    try:
        path, pol = make_case(i, pols, d)
        cmd = [BIN, "run", path, "-p", pol, "--no-db", "-q", "--json"]
        env = dict(os.environ, **SAN_ENV)
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=d,
                             start_new_session=True)
        try:
            out, err = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            return keep(i, "timeout", d, pol, b"", "killed after %g s" % TIMEOUT)
        wall = time.monotonic() - t0
        errt = err.decode("utf-8", "replace")
        rc = p.returncode
        if rc < 0 or rc in SAN_CODES or SAN_TEXT.search(errt) or rc not in (0, 1, 2):
            return keep(i, "crash", d, pol, err, "exit %d" % rc)
        if rc == 0:
            try:
                json.loads(out)
            except ValueError:
                return keep(i, "crash", d, pol, out[:2000], "exit 0 with output that is not JSON")
            return ("completed", wall)
        if not errt.strip():
            return keep(i, "crash", d, pol, b"", "exit %d without a message" % rc)
        return ("rejected" if rc == 2 else "failed", wall)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def keep(i, what, d, pol, detail, note):
    dst = os.path.join(OUT, "%s-%d" % (what, i))
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(d, dst)
    with open(os.path.join(dst, "NOTE"), "wb") as f:
        f.write(("case %d (FUZZ_SEED=%d): %s\ndpsim run case.yaml -p %s --no-db -q --json\n" %
                 (i, SEED, note, pol)).encode() + detail)
    return ("crashes" if what == "crash" else "timeouts", 0.0)


def main():
    only = None
    if len(sys.argv) == 3 and sys.argv[1] == "--only":
        only = int(sys.argv[2])
    pols = policies()
    sanitized = b"__asan_init" in open(os.path.realpath(BIN), "rb").read()
    print("fuzz_scenarios: %d cases, seed %d, %g s per run, %d jobs, policies %s; binary %s%s" %
          (CASES, SEED, TIMEOUT, JOBS, ",".join(pols), BIN,
           "" if sanitized else " (NOT a sanitizer build: memory errors may go unseen)"), flush=True)
    os.makedirs(OUT, exist_ok=True)
    counts = {k: 0 for k in ("completed", "rejected", "failed", "crashes", "timeouts")}
    per_policy = {p: {k: 0 for k in counts} for p in pols}
    idx = [only] if only is not None else range(CASES)
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as ex:
        futs = {ex.submit(run_case, i, pols): i for i in idx}
        done = 0
        for f in concurrent.futures.as_completed(futs):
            what, _ = f.result()
            i = futs[f]
            counts[what] += 1
            per_policy[pols[i % len(pols)]][what] += 1
            done += 1
            if what in ("crashes", "timeouts"):
                print("  case %d: %s (kept in %s)" % (i, what, OUT), flush=True)
            if done % 500 == 0:
                print("  %d/%d after %.0f s: %s" % (done, len(idx), time.monotonic() - t0, counts), flush=True)
    ran = sum(counts.values())
    print("ran %d: %d rejected (exit 2), %d completed, %d failed (exit 1), %d crashes, %d timeouts; %.0f s" %
          (ran, counts["rejected"], counts["completed"], counts["failed"], counts["crashes"], counts["timeouts"],
           time.monotonic() - t0))
    for p in pols:
        c = per_policy[p]
        print("  %-13s %s" % (p, " ".join("%s %d" % (k, v) for k, v in c.items())))
    return 1 if counts["crashes"] else 0


if __name__ == "__main__":
    sys.exit(main())
