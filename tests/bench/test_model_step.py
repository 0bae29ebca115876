#!/usr/bin/env python3
"""test_model_step.py - bench/model/model.py on a made-up site and record whose every step is
computed by hand below: the host-driven exchange (X = F_ls + M + 2 F_g beside the interior), the
signalled pass (F_p + shell against the whole block), the proxy pass (word round trip + MPI
one-way, or a measured F_m), the kernel's speed fitted to a run's step, two ranks sharing one NIC (their bytes add up) and then one NIC each, the record's
floors and kernel speed in place of the site's (predict.py --record, --site FILE), the measured
X of the same run, deep halos (a window of S steps in passes of T, the shell's slabs), weak and
strong efficiency, and bad inputs (one error line, exit 1: among them the --halo-width and
--fuse fdmini refuses, and a --csv that cannot be written, refused before the table is printed
and leaving an existing file as it was).
Usage: tests/bench/test_model_step.py     Exit 0 when every check passed (77: no numpy).
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "bench", "model")
sys.path.insert(0, MODEL)
import needs  # noqa: E402

needs.reexec(__file__)
if not needs.have(("numpy",)):
    print("SKIP: numpy is not installed for this python3 or /usr/bin/python3")
    sys.exit(77)

import checks  # noqa: E402
from checks import check  # noqa: E402
import inputs  # noqa: E402
import model  # noqa: E402
import predict  # noqa: E402

# Round numbers: F_g 1, F_ls 10, L_on 5, L_off 20, word 2, flag 1 us; links 0.8 GB/s (800 bytes
# a microsecond), a message off node 0.8 GB/s, the NIC 0.4 GB/s; the kernel 16 GB/s: heat's
# 16 bytes a point cost 0.001 us.
PARAMS = {"gpus_per_node": 1, "gpus_per_package": 1, "gpu_memory_GiB": 1, "nics_per_node": 1,
          "nic_GBs": 0.4, "offnode_message_GBs": 0.8, "mpi": "mpich", "mpi_latency_off_us": 20.0,
          "mpi_latency_on_us": 5.0, "launch_sync_us": 10.0, "graph_us": 1.0, "word_rtt_us": 2.0,
          "flag_us": 1.0, "link_same_package_GBs": 0.8, "link_other_GBs": 0.4, "kernel_GBs": 16.0,
          "fused_speedup": {"heat": {"2": [[1000, 2.0]]}}}


def site_file(folder, **over):
    p = dict(PARAMS, **over)
    doc = {"schema": "fdmini-site/1", "name": "test", "params": {k: {"value": v, "source": "made up"}
                                                                  for k, v in p.items()}}
    path = os.path.join(folder, "site-" + "-".join(f"{k}{v}" for k, v in sorted(over.items())) + ".json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def near(a, b):
    return a is not None and abs(a - b) <= 1e-9 * max(1.0, abs(b))


def step(site, N, P, K, nodes, path, S=1, T=1, floors=None):
    fl = model.Floors(site, "heat")
    for k, v in (floors or {}).items():
        setattr(fl, k, v)
    res = model.predict(model.Case("heat", N, P, K, nodes, S, T), fl, path)
    return None if res is None else res["step_us"]


with tempfile.TemporaryDirectory() as w:
    site = inputs.Site(site_file(w))
    check("the kernel: 16 bytes a point at 16 GB/s is 0.001 us", near(model.Floors(site, "heat").c1, 0.001))

    # two nodes of one rank, 10^3 each along z (P = 1x1x2): one z face of 10x10x8 = 800 bytes.
    # A block: 1000 points, 1 us, plus F_g: 2 us; interior 10x10x9 = 900 points, shell 100.
    N, P = (10, 10, 20), (1, 1, 2)
    # today: M = L_off + max(800 / 800, 800 / 400) = 22; X = 10 + 22 + 2 = 34;
    #   step = max(1 + 0.9, 34) + 1 + 0.1 = 35.1
    check("today across nodes: 35.1 us", near(step(site, N, P, 1, 2, "today"), 35.1), step(site, N, P, 1, 2, "today"))
    # proxy: hop = 2 + 22 = 24; step = max(2, max(1, 24) + 0.1) = 24.1
    check("proxy across nodes: 24.1 us", near(step(site, N, P, 1, 2, "proxy"), 24.1), step(site, N, P, 1, 2, "proxy"))
    check("signalled across nodes: none", step(site, N, P, 1, 2, "signalled") is None)
    # a measured F_m (the word, the MPI one-way and the face's own bytes: 800 / 800 = 1) of 30
    # replaces them; the NIC's 800 / 400 = 2 leaves 1 beyond the face's own: hop = 31, step 31.1
    check("proxy with a measured F_m of 30: 31.1 us", near(step(site, N, P, 1, 2, "proxy", floors={"Fm": 30.0}), 31.1),
          step(site, N, P, 1, 2, "proxy", floors={"Fm": 30.0}))

    # one node of two ranks (gpus_per_package 1: different packages, link 0.4 GB/s)
    site2 = inputs.Site(site_file(w, gpus_per_node=2))
    # today: M = L_on + 800 / 400 = 7; X = 10 + 7 + 2 = 19; step = 19 + 1 + 0.1 = 20.1
    check("today in a node: 20.1 us", near(step(site2, N, P, 2, 1, "today"), 20.1), step(site2, N, P, 2, 1, "today"))
    # signalled: F_p = F_g + flag + 800 / 400 = 4; step = max(2, 4 + 0.1) = 4.1
    check("signalled in a node: 4.1 us", near(step(site2, N, P, 2, 1, "signalled"), 4.1),
          step(site2, N, P, 2, 1, "signalled"))
    check("proxy on one node is the signalled pass", near(step(site2, N, P, 2, 1, "proxy"), 4.1))
    # same package: 800 / 800 = 1: F_p = 3, step 3.1
    site2p = inputs.Site(site_file(w, gpus_per_node=2, gpus_per_package=2))
    check("signalled between GCDs of one package: 3.1 us", near(step(site2p, N, P, 2, 1, "signalled"), 3.1),
          step(site2p, N, P, 2, 1, "signalled"))
    # the run's own F_p and X are taken as they are
    check("signalled with a measured F_p of 7: 7.1 us",
          near(step(site2, N, P, 2, 1, "signalled", floors={"Fp": 7.0}), 7.1))
    check("today with a measured X of 50: 51.1 us", near(step(site2, N, P, 2, 1, "today", floors={"X": 50.0}), 51.1))
    # the kernel's speed from a run the model describes: today with X 1 is max(1 + 900 c, 1) + 1
    # + 100 c = 2 + 1000 c, so a step of 3 us gives c = 0.001; two ranks sharing the GPU compute
    # both blocks: 2 + 2000 c = 3 gives 0.0005
    fl = model.Floors(site2, "heat")
    fl.X = 1.0
    check("fit_kernel: a step of 3 us on today's path with X 1 is c = 0.001",
          near(model.fit_kernel(model.Case("heat", N, P, 2, 1), fl, "today", 3.0, "t"), 0.001)
          and near(fl.c1, 0.001) and fl.src["c1"] == "t", fl.c1)
    check("fit_kernel: two ranks on one GPU, c = 0.0005",
          near(model.fit_kernel(model.Case("heat", N, P, 2, 1, ranks_per_gpu=2), fl, "today", 3.0, "t"), 0.0005),
          fl.c1)
    try:
        model.fit_kernel(model.Case("heat", N, P, 2, 1), fl, "today", 1.5, "t")
        check("fit_kernel: a step below the free kernel's (2 us) fails", False)
    except inputs.ModelError as err:
        check("fit_kernel: a step below the free kernel's (2 us) fails", "no kernel speed fits" in str(err), str(err))

    # NIC sharing: two nodes of two ranks on 1x2x2 (blocks 10^3): each node a 1x2x1 box, so
    # each rank sends one z face (800 bytes) off node and one y face on it; both ranks' bytes go
    # through the node's one NIC: 1600 / 400 = 4 us; M_off = 20 + 4 = 24, hop = 26.
    # proxy: interior 10x9x9 = 810, shell 190: step = max(2, max(F_p 4, 26) + 0.19) = 26.19
    site22 = inputs.Site(site_file(w, gpus_per_node=2))
    N2, P2 = (10, 20, 20), (1, 2, 2)
    check("proxy, two ranks sharing a NIC: 26.19 us", near(step(site22, N2, P2, 2, 2, "proxy"), 26.19),
          step(site22, N2, P2, 2, 2, "proxy"))
    # today: M = max(L_on 5 + 2, 24) = 24; X = 10 + 24 + 2 = 36; step = 36 + 1 + 0.19 = 37.19
    check("today, two ranks sharing a NIC: 37.19 us", near(step(site22, N2, P2, 2, 2, "today"), 37.19),
          step(site22, N2, P2, 2, 2, "today"))
    # a NIC each: 800 / 400 = 2: hop 24, proxy 24.19
    site22n = inputs.Site(site_file(w, gpus_per_node=2, nics_per_node=2))
    check("proxy, a NIC each: 24.19 us", near(step(site22n, N2, P2, 2, 2, "proxy"), 24.19),
          step(site22n, N2, P2, 2, 2, "proxy"))

    # deep halos, S = 2, T = 1, one node of two ranks along z: step t of the window updates the
    # block grown by 1 - t layers on the side with a neighbour: 1100 then 1000 points. Pass 0:
    # interior 10x10x9 = 900, shell 1100 - 900 = 200 in one slab; X (regions 10x10x2 = 1600
    # bytes): M = 5 + 1600 / 400 = 9, X = 10 + 9 + 2 = 21.
    # window = max(1 + 0.9, 21) + 1 * 1 + 0.2 + (1 + 1.0) = 24.2; step = 12.1
    check("deep halos, S = 2, T = 1: 12.1 us", near(step(site2, N, P, 2, 1, "today", S=2), 12.1),
          step(site2, N, P, 2, 1, "today", S=2))
    # three ranks along z: the middle one has neighbours on 2 sides, its pass 0 boxes 1200 then
    # 1000 points, interior 10x10x8 = 800, shell 400 in 2 slabs (a launch each); X as above
    # (two faces, sent together): window = 21 + 2 x 1 + 0.4 + (1 + 1.0) = 25.4; step 12.7 (the
    # end ranks: 12.1)
    site3 = inputs.Site(site_file(w, gpus_per_node=3))
    check("deep halos, S = 2, the middle of three ranks: 12.7 us (a launch per shell slab)",
          near(step(site3, (10, 10, 30), (1, 1, 3), 3, 1, "today", S=2), 12.7),
          step(site3, (10, 10, 30), (1, 1, 3), 3, 1, "today", S=2))
    # T = 2 (fused speedup 2: 0.0005 us a point-step): one pass of boxes 1100 + 1000, interior
    # 2 x 10x10x8 = 1600, shell 500: window = max(1 + 0.8, 21) + 1 + 0.25 = 22.25; step 11.125
    check("deep halos, S = T = 2: 11.125 us", near(step(site2, N, P, 2, 1, "today", S=2, T=2), 11.125),
          step(site2, N, P, 2, 1, "today", S=2, T=2))
    # the deep signalled exchange runs before the window: F_p (1 + 1 + 1600 / 400 = 6) + the
    # passes (1 + 1.1 and 1 + 1.0): 10.1 a window, 5.05 a step
    check("deep signalled, S = 2: 5.05 us", near(step(site2, N, P, 2, 1, "signalled", S=2), 5.05),
          step(site2, N, P, 2, 1, "signalled", S=2))

    # efficiency: weak T_alone / T_step (alone: 2 us), strong T_1 / (R T_step) (T_1 of 10x10x20:
    # 1 + 2 = 3 us)
    r = predict.scenario(site, "heat", 2, local=(10, 10, 10))
    check("weak efficiency of today: 2 / 35.1", near(r["paths"]["today"]["eff"], 2 / 35.1), r["paths"]["today"]["eff"])
    r = predict.scenario(site, "heat", 2, global_size=(10, 10, 20))
    check("strong efficiency of proxy: 3 / (2 x 24.1)", near(r["paths"]["proxy"]["eff"], 3 / 48.2),
          r["paths"]["proxy"]["eff"])
    check("the grid fdmini makes: 1x1x2", r["P"] == (1, 1, 2), r["P"])

    # a record's floors and kernel: F_g 2, F_ls 4, L 3, one rank of 10^3 in 0.004 ms: the kernel
    # (4 - 2) / 1000 = 0.002 us a point. Two nodes: today X = 4 + 22 + 4 = 30;
    # step = max(2 + 1.8, 30) + 2 + 0.2 = 32.2
    stat = lambda v: {"min": v, "avg": v, "max": v}  # noqa: E731
    rec = {"schema": "fdmini-run/1", "ranks": 1, "global": [10, 10, 10], "fuse": {"steps": 1},
           "phases_ms": {"step": stat(0.004)},
           "floors_us": {"graph": stat(2.0), "launch_sync": stat(4.0), "latency": stat(3.0)}}
    rpath = os.path.join(w, "run.json")
    with open(rpath, "w") as f:
        json.dump(rec, f)
    r = predict.scenario(site, "heat", 2, local=(10, 10, 10), record=rec, record_name="run.json")
    check("with the record's floors and kernel: today 32.2 us", near(r["paths"]["today"]["step_us"], 32.2),
          r["paths"]["today"]["step_us"])
    check("the record named as the source of F_g and the kernel",
          r["floors"].src["g"] == "record run.json" and r["floors"].src["c1"] == "record run.json", r["floors"].src)
    tool = os.path.join(MODEL, "predict.py")
    p = subprocess.run([sys.executable, tool, "--site", site_file(w), "--local", "10", "--nodes", "2",
                        "--record", rpath], capture_output=True, text=True)
    check("predict.py --record --site FILE prints today's 32.20", p.returncode == 0 and " 32.20 " in p.stdout,
          p.stdout + p.stderr)
    # the record's kernel is of its operator and precision: another's is refused, one line
    for over, args in (({"op": "jacobi"}, []), ({"op": "heat", "precision": "float"}, []),
                       ({"op": "heat", "precision": "double"}, ["--float"])):
        with open(os.path.join(w, "other.json"), "w") as f:
            json.dump(dict(rec, **over), f)
        p = subprocess.run([sys.executable, tool, "--site", site_file(w), "--local", "10", "--nodes", "2",
                            "--record", os.path.join(w, "other.json")] + args, capture_output=True, text=True)
        out = p.stdout + p.stderr
        check(f"predict.py --record of {over} {' '.join(args)}: the kernel is not heat's in "
              f"{'float' if args else 'double'}: one error line", p.returncode == 1 and "other.json" in out
              and "kernel's speed is of" in out and len(out.splitlines()) == 1, out)
    with open(os.path.join(w, "other.json"), "w") as f:
        json.dump(dict(rec, op="heat", precision="double"), f)
    p = subprocess.run([sys.executable, tool, "--site", site_file(w), "--local", "10", "--nodes", "2",
                        "--record", os.path.join(w, "other.json")], capture_output=True, text=True)
    check("predict.py --record of heat in double: today's 32.20", p.returncode == 0 and " 32.20 " in p.stdout,
          p.stdout + p.stderr)
    # a record whose kernel fields are not what fdmini writes: one error line naming the field
    # (a traceback, or with an infinite step a table of inf and nan, before)
    for over, field in (({"fuse": {"steps": "abc"}}, "fuse.steps"), ({"global": [10, 10]}, "global"),
                        ({"phases_ms": [0.004]}, "phases_ms.step.max"),
                        ({"phases_ms": {"step": {"max": float("inf")}}}, "phases_ms.step.max"),
                        ({"ranks": 2, "baseline": True, "alone_step_ms": {"avg": 0.004}, "local_max": [10, 10, "x"]},
                         "local_max")):
        with open(os.path.join(w, "bad-rec.json"), "w") as f:
            json.dump(dict(rec, **over), f)
        p = subprocess.run([sys.executable, tool, "--site", site_file(w), "--local", "10", "--nodes", "2",
                            "--record", os.path.join(w, "bad-rec.json")], capture_output=True, text=True)
        out = p.stdout + p.stderr
        check(f"predict.py --record with {over}: one error line naming {field}", p.returncode == 1
              and f"bad-rec.json: {field} is" in out and len(out.splitlines()) == 1, out)
    # single precision: 8 bytes a point of heat at the site's 16 GB/s, the kernel's speed as given
    p = subprocess.run([sys.executable, tool, "--site", site_file(w), "--local", "10", "--nodes", "2", "--float"],
                       capture_output=True, text=True)
    check("predict.py --float: the kernel at the site's 16 GB/s", p.returncode == 0 and "kernel 16 GB/s" in p.stdout,
          p.stdout + p.stderr)

    # bad inputs: one line, exit 1, no traceback
    for args, named in ((["--site", "nowhere", "--local", "8"], "nowhere"),
                        (["--site", site_file(w), "--global", "8,8"], "--global"),
                        (["--site", site_file(w), "--local", "8", "--op", "nope"], "nope"),
                        (["--site", site_file(w), "--local", "8", "--nodes", "0"], "--nodes"),
                        (["--site", site_file(w), "--local", "", "--nodes", "2"], "--local ''"),
                        (["--site", site_file(w), "--global", "", "--nodes", "2"], "--global ''"),
                        (["--site", site_file(w), "--global", "7", "--nodes", "16"], "16 node(s): subdomain too thin"),
                        (["--site", site_file(w), "--global", "7", "--nodes", "16,32"], "and 1 more"),
                        (["--site", site_file(w), "--local", "8", "--record", os.path.join(w, "no.json")], "no.json"),
                        # what fdmini refuses of --halo-width and --fuse (src/run/options.c)
                        (["--site", site_file(w), "--local", "8", "--halo-width", "0"], "--halo-width 0"),
                        (["--site", site_file(w), "--local", "80", "--halo-width", "65"], "--halo-width 65"),
                        (["--site", site_file(w), "--local", "8", "--fuse", "0"], "--fuse 0"),
                        (["--site", site_file(w), "--local", "8", "--halo-width", "5", "--fuse", "5"], "--fuse 5"),
                        (["--site", site_file(w), "--local", "8", "--halo-width", "2", "--op", "laplacian"],
                         "laplacian is one application"),
                        (["--site", site_file(w), "--local", "8", "--halo-width", "2", "--fuse", "2", "--op",
                          "wave"], "apply to heat and jacobi")):
        p = subprocess.run([sys.executable, tool] + args, capture_output=True, text=True)
        out = p.stdout + p.stderr
        check(f"predict.py {' '.join(args[4:])}: one error line naming {named}",
              p.returncode == 1 and named in out and "Traceback" not in out and len(out.splitlines()) == 1, out)
    # --csv: written whole or not at all, before the table is printed; a path that cannot be
    # written is one error line with nothing printed before it (the whole table came first), an
    # existing file is left as it was and no temporary file stays
    table = os.path.join(w, "table.csv")
    with open(table, "w") as f:
        f.write("old\n")
    for target, named in ((os.path.join(w, "no-dir", "t.csv"), "No such file or directory"),
                          (w, "not a regular file"), (os.path.join(table, "t.csv"), "Not a directory")):
        p = subprocess.run([sys.executable, tool, "--site", site_file(w), "--local", "8", "--nodes", "1,2",
                            "--csv", target], capture_output=True, text=True)
        check(f"predict.py --csv {os.path.relpath(target, w)}: one error line naming it ({named}), nothing printed",
              p.returncode == 1 and p.stdout == "" and len(p.stderr.splitlines()) == 1
              and f"predict.py: error: {target}: cannot write: {named}" in p.stderr, p.stdout + p.stderr)
    blocked = f"{os.path.realpath(table)}.{os.getpid()}.tmp"
    os.mkdir(blocked)  # the temporary name taken: the write fails after the checks
    try:
        predict.write_csv(table, [{"nodes": 1}])
        check("predict.write_csv with its temporary name taken fails", False, "no error")
    except predict.ModelError as err:
        with open(table) as f:
            kept = f.read()
        check("predict.write_csv with its temporary name taken: one error, the file as it was, the "
              "name not removed", "table.csv: cannot write: File exists" in str(err) and kept == "old\n"
              and os.path.isdir(blocked), (str(err), kept))
    os.rmdir(blocked)
    p = subprocess.run([sys.executable, tool, "--site", site_file(w), "--local", "8", "--nodes", "1,2",
                        "--csv", table], capture_output=True, text=True)
    with open(table, newline="") as f:
        got = list(csv.DictReader(f))
    check("predict.py --csv over an existing file: replaced by the table, printed too",
          p.returncode == 0 and [r["nodes"] for r in got] == ["1", "2"] and "today_us" in got[0]
          and " nodes " in p.stdout and not [n for n in os.listdir(w) if n.endswith(".tmp")], p.stdout + p.stderr)
    # blocks whose fields do not fit a GPU's memory (the made-up site's 1 GiB) are refused as
    # fdmini refuses them: heat holds 2 fields of the block with its ghosts, jacobi 3 (its f)
    for args, ok, named in ((["--local", "512", "--nodes", "2"], False,
                             "the largest block, 512x512x512, needs 2.0 GiB for its 2 fields, more than a GPU's 1 GiB"),
                            (["--local", "400", "--nodes", "2"], True, ""),
                            (["--local", "400", "--nodes", "2", "--op", "jacobi"], False, "needs 1.5 GiB for its 3 fields"),
                            (["--global", "1024", "--nodes", "1,64"], True,
                             "predict: 1 node(s): the largest block, 1024x1024x1024, needs 16.1 GiB")):
        p = subprocess.run([sys.executable, tool, "--site", site_file(w)] + args, capture_output=True, text=True)
        out = p.stdout + p.stderr
        if ok:
            good = p.returncode == 0 and named in p.stderr and (" 64 " in p.stdout if named else True)
        else:
            good = p.returncode == 1 and named in out and len(out.splitlines()) == 1
        check(f"predict.py {' '.join(args)}: {'runs' if ok else 'refused'}{', naming ' + named if named else ''}",
              good, out)
    # the limits are fdmini's
    with open(os.path.join(MODEL, "..", "..", "src", "run", "options.h")) as f:
        hw = "#define FD_HALO_WIDTH_MAX %d" % predict.HALO_WIDTH_MAX in f.read()
    with open(os.path.join(MODEL, "..", "..", "kernels", "backend.h")) as f:
        fm = "#define FD_FUSE_MAX %d" % predict.FUSE_MAX in f.read()
    check("predict.py's --halo-width and --fuse limits are FD_HALO_WIDTH_MAX and FD_FUSE_MAX", hw and fm, (hw, fm))
    bad = dict(PARAMS)
    del bad["nic_GBs"]
    bpath = os.path.join(w, "bad-site.json")
    with open(bpath, "w") as f:
        json.dump({"schema": "fdmini-site/1", "params": {k: {"value": v, "source": "x"} for k, v in bad.items()}}, f)
    p = subprocess.run([sys.executable, tool, "--site", bpath, "--local", "8"], capture_output=True, text=True)
    check("a site file without nic_GBs: one error naming it", p.returncode == 1 and "nic_GBs" in p.stderr
          and "Traceback" not in p.stderr, p.stderr)
    # a site of one GPU a node: its header says "1 rank per node"
    one = dict(PARAMS)
    one["gpus_per_node"] = 1
    with open(bpath, "w") as f:
        json.dump({"schema": "fdmini-site/1", "params": {k: {"value": v, "source": "x"} for k, v in one.items()}}, f)
    p = subprocess.run([sys.executable, tool, "--site", bpath, "--local", "64", "--nodes", "1,2"],
                       capture_output=True, text=True)
    check("a site of one GPU a node: '1 rank per node'", p.returncode == 0 and " 1 rank per node " in p.stdout,
          p.stdout + p.stderr)
    nosrc = {"schema": "fdmini-site/1", "params": {k: {"value": v, "source": "x"} for k, v in PARAMS.items()}}
    nosrc["params"]["graph_us"] = {"value": 1.0}
    with open(bpath, "w") as f:
        json.dump(nosrc, f)
    p = subprocess.run([sys.executable, tool, "--site", bpath, "--local", "8"], capture_output=True, text=True)
    check("a value without its source is refused", p.returncode == 1 and "graph_us" in p.stderr, p.stderr)
    # values that are no numbers a model can use: one error line naming them (before: tables of
    # nan, inf or negative efficiencies as success, or a traceback)
    for over, named in (({"nic_GBs": float("nan")}, "nic_GBs"), ({"graph_us": float("inf")}, "graph_us"),
                        ({"fused_speedup": {"heat": {"2": [[1000, -1.0]]}}}, "fused_speedup"),
                        ({"fused_speedup": {"heat": [1.5]}}, "fused_speedup")):
        p = subprocess.run([sys.executable, tool, "--site", site_file(w, **over), "--local", "8", "--nodes", "1,2",
                            "--halo-width", "2", "--fuse", "2"], capture_output=True, text=True)
        out = p.stdout + p.stderr
        check(f"a site with {over}: one error line naming {named}", p.returncode == 1 and named in out
              and len(out.splitlines()) == 1, out)

    # the wave sends both time levels with deep halos (src/solver/state.c): its S = 2 face 10x10x2
    # is 2 x 1600 bytes; at S = 1 one level
    wave2 = model.Case("wave", (10, 10, 20), (1, 1, 2), 2, 1, 2, 1).plan.nbytes.max()
    wave1 = model.Case("wave", (10, 10, 20), (1, 1, 2), 2, 1, 1, 1).plan.nbytes.max()
    check("the wave's deep face holds two levels: 3200 bytes; at width 1 800", wave2 == 3200 and wave1 == 800,
          (wave2, wave1))

    # the operators' bytes come from src/model/problem.c
    ops = inputs.operators()
    check("problem.c: heat 2 words a point, jacobi 3 and a right-hand side, the wave 3 with 2 levels",
          ops.get("heat") == {"words": 2, "levels": 1, "rhs": 0}
          and ops.get("jacobi") == {"words": 3, "levels": 1, "rhs": 1}
          and ops.get("wave") == {"words": 3, "levels": 2, "rhs": 0}, ops)

print(f"model step test: {'FAILED' if checks.failed else 'passed'} ({checks.failed} failed, {checks.passed} passed)")
sys.exit(1 if checks.failed else 0)
