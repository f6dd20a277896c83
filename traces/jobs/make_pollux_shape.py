#!/usr/bin/env python3
"""Write a job trace in the Pollux workload shape (name,time,application,
num_replicas,batch_size) to stdout: N jobs arriving as a Poisson process
over HOURS hours, applications and replica counts drawn with fixed weights.

This is NOT Pollux's trace (its artifact samples the Microsoft Philly
trace); it only has its columns and applications, for dpsim's benchmark
(tests/bench_jobs.sh).  Deterministic: the same arguments give the same
file.  Usage: make_pollux_shape.py [N] [HOURS] [SEED]"""
import random
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 160
hours = float(sys.argv[2]) if len(sys.argv) > 2 else 8
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
# application: (weight, whole batch size)
apps = {"cifar10": (35, 128), "ncf": (25, 256), "bert": (10, 12), "deepspeech2": (10, 20),
        "yolov3": (10, 8), "imagenet": (10, 200)}
names = list(apps)
weights = [apps[a][0] for a in names]
replicas = [1, 2, 4, 8, 16]
rep_w = [40, 25, 20, 10, 5]
t = 0.0
print("name,time,application,num_replicas,batch_size")
for i in range(n):
    t += rng.expovariate(n / (hours * 3600))
    a = rng.choices(names, weights)[0]
    r = rng.choices(replicas, rep_w)[0]
    print(f"{a}-{i},{int(t)},{a},{r},{apps[a][1]}")
