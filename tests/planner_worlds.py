#!/usr/bin/env python3
"""planner_worlds.py: C-ADP's planned Ttotal against the simulated one on
seeded random worlds with shared links (issue 34).

Each world has a server NIC limit (50 Mbit/s to 1 Gbit/s each way) and, in
every other world, sites joined by WAN links (the server in site a, devices
in a, b, c, a TCP window now and then).  2 to 8 devices in 1 to 4 groups,
access links of 10 Mbit/s to 1 Gbit/s, models of 4 to 400 MB, 1 to 5 epochs.
No traces and no noise: what the planner's model is meant to cover.  For
each world it runs `dpsim run --policy cadp` (solver exact) and prints the
plan's objective (stat plan.objective_s) next to the simulated Ttotal, and
sim/plan - 1; with --before BIN, the same from another dpsim build (the
planner before it saw shared links) in two more columns.

Property (exit 1 if it fails, unless --report-only): |sim/plan - 1| <= 5%
on every world the model covers, i.e. where the simulated timeline leaves
none of the model's assumptions by more than 5% of Ttotal (see outside()).

Usage: planner_worlds.py DPSIM [--before BIN] [--worlds N] [--seed S] [--report-only] [--keep DIR]
"""
import argparse, json, os, random, subprocess, sys, tempfile

def world(rng, i):
    sites = i % 2 == 1
    lines = ["name: p%d-%s" % (i, "sites" if sites else "nic"),
             "model: { name: m, params: %d, bytes_per_param: 4, flops_per_sample: 1.0e9 }"
             % rng.choice([1e6, 5e6, 25e6, 100e6]),
             "dataset: { name: d, samples: %d, sample_bytes: %dKB }"
             % (rng.choice([1000, 5000, 20000]), rng.choice([3, 30, 115])),
             "training: { epochs: %d, seed: %d }" % (rng.randint(1, 5), i + 1),
             "server:",
             "  nic: { up: %dMbps, down: %dMbps }" % (rng.choice([50, 100, 200, 1000]), rng.choice([50, 100, 200, 1000])),
             "  aggregate_rate: %dMB/s" % rng.choice([100, 1000, 4000])]
    if sites:
        lines.append("  site: a")
        if rng.random() < 0.4:
            lines.append("network: { tcp_window: %dKiB }" % rng.choice([256, 1024, 4096]))
        lines.append("sites: [ { name: a }, { name: b }, { name: c } ]")
        lines.append("wan:")
        lines.append("  - { between: [a, b], bandwidth: %dMbps, latency: %dms }"
                     % (rng.choice([50, 100, 400]), rng.randint(5, 80)))
        lines.append("  - { between: [a, c], bandwidth: %dMbps, latency: %dms }"
                     % (rng.choice([50, 100, 400]), rng.randint(5, 80)))
    lines.append("devices:")
    ngroups = rng.randint(1, 4)
    left = rng.randint(max(2, ngroups), 8)
    for g in range(ngroups):
        count = left if g == ngroups - 1 else rng.randint(1, max(1, left - (ngroups - 1 - g)))
        left -= count
        if count <= 0:
            break
        bw = rng.choice([10, 50, 100, 1000])
        site = ", site: %s" % rng.choice("abc") if sites else ""
        lines.append("  - { name: g%d, count: %d, kind: %s, memory: 16GiB, batch: %d, batch_time: %gs%s, "
                     "link: { up: %dMbps, down: %dMbps, latency: %dms } }"
                     % (g, count, rng.choice(["gpu", "cpu"]), rng.choice([4, 16, 32, 64]),
                        round(rng.uniform(0.01, 0.6), 3), site, bw, bw, rng.randint(1, 30)))
    lines.append("policies: { cadp: { solver: exact } }")
    return "\n".join(lines) + "\n"

def run(bin_, y):
    p = subprocess.run([bin_, "run", y, "--no-db", "--json", "--policy", "cadp"], capture_output=True, text=True)
    if p.returncode:
        return None, p.stderr.strip()[:200]
    r = json.loads(p.stdout)["runs"][0]
    st = {x["name"]: x["value"] for x in r["stats"]}
    return (st["plan.objective_s"], r["ttotal_s"], r), None

def solve(bin_, y):
    p = subprocess.run([bin_, "solve", y, "--json"], capture_output=True, text=True)
    return json.loads(p.stdout) if p.returncode == 0 else {"status": "?", "send_s": 0}

def outside(run, sol, epochs):
    """Where the run leaves the planner's model (docs/MODEL.md section 5),
    read from the simulated timeline: each by more than 5% of Ttotal.
    overlap: the model trains after the whole send, the run starts each
    device when its own data is there (their data arrive over a spread);
    staggered: the model takes a saturated link's uploads as arriving
    together, the participants' epochs end apart; maxmin: the model's send
    term is the fluid bound, max-min sharing of a saturated link among
    flows also held by their own links ends the send later."""
    t = run["ttotal_s"]
    parts = [d for d in run["devices"] if d["samples"] > 0]
    why = []
    ready = [d["data_ready_s"] for d in parts]
    if max(ready) - min(ready) > 0.05 * t:
        why.append("overlap")
    comp = [d["compute_s"] / epochs for d in parts]
    if max(comp) - min(comp) > 0.05 * t / epochs:
        why.append("staggered")
    if run["tsend_s"] - sol["send_s"] > 0.05 * t:
        why.append("maxmin")
    return why

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dpsim")
    ap.add_argument("--before")
    ap.add_argument("--worlds", type=int, default=40)
    ap.add_argument("--seed", type=int, default=34)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--keep", help="write the worlds into this directory")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    bad = 0
    errs = []
    hdr = "%-10s %4s %12s %12s %8s" % ("world", "devs", "planned (s)", "sim (s)", "sim/plan")
    if a.before:
        hdr += " | %12s %12s %8s" % ("before plan", "before sim", "sim/plan")
    print(hdr + "  status")
    within = [0, 0]
    covered = 0
    with tempfile.TemporaryDirectory() as tmp:
        tdir = a.keep or tmp
        for i in range(a.worlds):
            y = os.path.join(tdir, "p%d.yaml" % i)
            text = world(rng, i)
            with open(y, "w") as f:
                f.write(text)
            ndev = sum(int(l.split("count: ")[1].split(",")[0]) for l in text.splitlines() if "count: " in l)
            now, e = run(a.dpsim, y)
            if e:
                print("p%-9d error: %s" % (i, e))
                bad += 1
                continue
            plan, sim, rr = now
            sol = solve(a.dpsim, y)
            status = sol["status"]
            epochs = int(text.split("epochs: ")[1].split(",")[0])
            why = outside(rr, sol, epochs)
            line = "%-10s %4d %12.3f %12.3f %+7.2f%%" % ("p%d-%s" % (i, "sites" if i % 2 else "nic"), ndev, plan, sim,
                                                      100 * (sim / plan - 1))
            if a.before:
                b, e = run(a.before, y)
                line += " | %12.3f %12.3f %+7.2f%%" % (b[0], b[1], 100 * (b[1] / b[0] - 1)) if b else " | error"
                if b:
                    within[1] += abs(b[1] / b[0] - 1) <= 0.05
            ok = abs(sim / plan - 1) <= 0.05
            within[0] += ok
            covered += not why
            flag = "" if ok else ("  (outside: %s)" % ",".join(why) if why else "  FAILS")
            if not ok and not why:
                bad += 1
            print(line + "  " + status + flag)
    print("planner_worlds: %d worlds, %d within 5%% now%s; %d the model covers, %d of them outside 5%%"
          % (a.worlds, within[0], (", %d before" % within[1]) if a.before else "", covered, bad))
    return 1 if bad and not a.report_only else 0

if __name__ == "__main__":
    sys.exit(main())
