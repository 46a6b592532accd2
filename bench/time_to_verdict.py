#!/usr/bin/python3
"""Time to a verdict on real models (issue 17, item 5): trains faulty variants (the
learning rate x100) of the harness nets with `deeplocalize train --format json`, one
after the other, and prints for each when the tool reported its first conclusive fault,
then the medians over the variants.

  /usr/bin/python3 bench/time_to_verdict.py [--build build] [--data DIR] [--threads 1]
      [--seeds 1,2,3] [--nets resnet18,lstm_cls]

DATA holds gen_bench_models.py's output (bench/run.sh writes it). A variant is a net
with its metadata's learning rate x100 (Adam 0.001 -> 0.1) and a seed (--seed: weights
re-drawn with the model's own initialisation, batch order). What the report records:
each finding's `iteration` (where its evidence begins) and `conclusive`; the online
analysis stops training at the first conclusive fault (`training.stopped_early`,
`training.iterations`), otherwise the faults are reported when the epoch ends. So
"reported at" is `training.iterations` (the iterations run before the report), the
seconds are the report's import + train + analysis times (wall) and the process CPU
time (steadier on a shared machine)."""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_OF = {"resnet18": "cifar1k.npy", "mobilenet_v2": "cifar1k.npy", "shufflenet_v2_x0_5": "cifar1k.npy",
           "lstm_cls": "seq1k.npy", "transformer": "seq1k.npy"}


def metadata_lr(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    return float({p.key: p.value for p in m.metadata_props}.get("deeplocalize.learning_rate", "0.01"))


def run_variant(tool, data, net, seed, threads):
    model = os.path.join(data, net + ".onnx")
    lr = 100 * metadata_lr(model)
    cmd = [tool, "train", model, os.path.join(data, DATA_OF[net]), "--lr", repr(lr), "--seed", str(seed),
           "--format", "json", "--threads", str(threads), "--quiet"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    r = json.loads(p.stdout)
    conclusive = [f for f in r["findings"] if f.get("conclusive")]
    first = min(conclusive, key=lambda f: f.get("iteration") or 0) if conclusive else None
    tr, tm = r["training"], r["timing"]
    return {"net": net, "seed": seed, "lr": lr, "verdict": r["verdict"],
            "primary": "%s/%s" % (r["findings"][0]["symptom"], r["findings"][0]["root_cause"]) if r["findings"] else "-",
            "first_conclusive": "%s@%s" % (first["symptom"], first.get("iteration")) if first else "-",
            "evidence_iteration": first.get("iteration") if first else None,
            "reported_at": tr["iterations"], "stopped_early": tr["stopped_early"],
            "seconds": tm["import_s"] + tm["train_s"] + tm["analysis_s"], "wall": wall, "cpu": cpu}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--data", default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--nets", default="resnet18,lstm_cls")
    a = ap.parse_args()
    data = a.data or os.path.join(a.build, "bench-data")
    tool = os.path.join(a.build, "deeplocalize")
    print(f"# time to a verdict  {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}  threads {a.threads}  "
          f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}", flush=True)
    print("| net | seed | lr | verdict | primary finding | first conclusive (evidence iteration) | "
          "reported after iterations | stopped early | seconds (report) | wall s | CPU s |", flush=True)
    print("|---|---:|---:|---|---|---|---:|---|---:|---:|---:|", flush=True)
    rows = []
    for net in a.nets.split(","):
        for seed in (int(s) for s in a.seeds.split(",")):
            v = run_variant(tool, data, net, seed, a.threads)
            rows.append(v)
            print("| %s | %d | %g | %s | %s | %s | %d | %s | %.1f | %.1f | %.1f |" % (
                net, seed, v["lr"], v["verdict"], v["primary"], v["first_conclusive"], v["reported_at"],
                "yes" if v["stopped_early"] else "no", v["seconds"], v["wall"], v["cpu"]), flush=True)
    faults = [v for v in rows if v["verdict"] == "fault"]
    print(f"\nfaults found: {len(faults)} of {len(rows)} variants; load average after: "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}")
    for label, sel in [("all", faults)] + [(n, [v for v in faults if v["net"] == n]) for n in a.nets.split(",")]:
        if not sel:
            continue
        ev = [v["evidence_iteration"] for v in sel if v["evidence_iteration"] is not None]
        print("median (%s, %d): reported after %g iterations, %.1f s (report), %.1f s wall, %.1f s CPU; "
              "first conclusive evidence at iteration %s" % (
                  label, len(sel), statistics.median(v["reported_at"] for v in sel),
                  statistics.median(v["seconds"] for v in sel), statistics.median(v["wall"] for v in sel),
                  statistics.median(v["cpu"] for v in sel), statistics.median(ev) if ev else "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
