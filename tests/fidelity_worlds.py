#!/usr/bin/env python3
"""fidelity_worlds.py: issue 11's property over random small worlds.

For each of N seeded random worlds (kinds: star = every device on its own
link and no server NIC limit; nic = a shared server NIC; wan = sites joined
by WAN links, some with a TCP window; trace = a link or WAN trace), run
C-ADP with solver exact and print the planned objective next to the
simulated Ttotal.  Property: when nothing is shared and nothing varies
(star worlds, and wan worlds that drew no sites: no NIC limit, no
WAN, no trace, no noise), the simulated Ttotal
never exceeds the plan (the plan is conservative only because a device
starts as soon as its own data is there).  Exit 1 if it fails.

Usage: fidelity_worlds.py DPSIM [N] [SEED]
"""
import json, os, random, subprocess, sys, tempfile

def world(rng, kind, i, tdir):
    n = rng.randint(2, 6)
    lines = [f"name: w{i}-{kind}",
             "model: { name: m, params: %d, bytes_per_param: 4, flops_per_sample: 1.0e9 }" % rng.choice([1e5, 1e6, 5e6]),
             "dataset: { name: d, samples: %d, sample_bytes: %dKB }" % (rng.choice([200, 1000, 5000]), rng.choice([3, 30, 100])),
             "training: { epochs: %d, seed: %d }" % (rng.randint(1, 4), i + 1)]
    srv = ["server:"]
    if kind == "nic":
        srv.append("  nic: { up: %dMbps, down: %dMbps }" % (rng.choice([50, 200]), rng.choice([50, 200])))
    srv.append("  aggregate_rate: %dMB/s" % rng.choice([10, 100, 1000]))
    sites = kind in ("wan", "trace") and rng.random() < 0.7
    if sites:
        srv.append("  site: a")
    lines += srv
    if sites:
        if rng.random() < 0.5:
            lines.append("network: { tcp_window: %dKiB }" % rng.choice([64, 256, 1024]))
        lines.append("sites: [ { name: a }, { name: b }, { name: c } ]")
        lines.append("wan:")
        lines.append("  - { between: [a, b], bandwidth: %dMbps, latency: %dms }" % (rng.choice([100, 400]), rng.randint(5, 80)))
        if kind == "trace":
            csv = os.path.join(tdir, f"w{i}.csv")
            with open(csv, "w") as f:
                f.write("time_s,bandwidth_bps\n0,%d\n%g,%d\n" % (rng.choice([50e6, 200e6]), rng.uniform(0.5, 20), rng.choice([20e6, 300e6])))
            lines.append("  - { between: [b, c], latency: %dms, trace: { file: %s, loop: %s } }" % (rng.randint(5, 80), csv, rng.choice(["true", "false"])))
        else:
            lines.append("  - { between: [b, c], bandwidth: %dMbps, latency: %dms }" % (rng.choice([100, 400]), rng.randint(5, 80)))
    lines.append("devices:")
    trace_dev = kind == "trace" and not sites
    for d in range(n):
        bs = rng.choice([4, 8, 16, 32])
        link = "up: %dMbps, latency: %dms" % (rng.choice([10, 50, 100, 1000]), rng.randint(1, 30))
        if trace_dev and d == 0:
            csv = os.path.join(tdir, f"w{i}-d.csv")
            with open(csv, "w") as f:
                f.write("time_s,bandwidth_bps\n0,%d\n%g,%d\n" % (rng.choice([5e6, 50e6]), rng.uniform(0.1, 5), rng.choice([10e6, 100e6])))
            link += ", down_trace: %s" % csv
        else:
            link += ", down: %dMbps" % rng.choice([10, 50, 100, 1000])
        site = ", site: %s" % rng.choice("abc") if sites else ""
        lines.append("  - { name: d%d, kind: %s, memory: 8GiB, batch: %d, batch_time: %gs%s, link: { %s } }"
                     % (d, rng.choice(["gpu", "cpu"]), bs, round(rng.uniform(0.005, 0.5), 3), site, link))
    lines.append("policies: { cadp: { solver: exact } }")
    plain = kind == "star" or (kind == "wan" and not sites)  # nothing shared, nothing varies
    return "\n".join(lines) + "\n", plain

def main():
    bin_ = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 48
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 11)
    kinds = ["star", "nic", "wan", "trace"]
    bad = 0
    print("%-14s %12s %12s %9s  %s" % ("world", "planned (s)", "simulated (s)", "sim/plan", "property"))
    with tempfile.TemporaryDirectory() as tdir:
        for i in range(n):
            kind = kinds[i % 4]
            y = os.path.join(tdir, f"w{i}.yaml")
            text, plain = world(rng, kind, i, tdir)
            with open(y, "w") as f:
                f.write(text)
            p = subprocess.run([bin_, "run", y, "--no-db", "--json", "--policy", "cadp"], capture_output=True, text=True)
            if p.returncode:
                print("w%-13d %s: %s" % (i, kind, p.stderr.strip()[:200]))
                bad += 1
                continue
            r = json.loads(p.stdout)["runs"][0]
            plan = {x["name"]: x["value"] for x in r["stats"]}["plan.objective_s"]
            sim = r["ttotal_s"]
            held = "-"
            if plain:
                held = "holds" if sim <= plan * (1 + 1e-9) else "FAILS"
                bad += held == "FAILS"
            print("%-14s %12.4f %12.4f %9.4f  %s" % (f"w{i}-{kind}", plan, sim, sim / plan, held))
    print("fidelity_worlds: %d worlds, %d failures" % (n, bad))
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main())
