#!/usr/bin/env python3
"""Kill campaign for the death watch (comm/death_watch.h): does it name the rank that died?

Each run starts a small `dplab train` under mpiexec, waits a random time (uniform over the
start-up and the whole run), SIGKILLs one random rank and reads what the job printed. A run is
  correct  the killed rank, and only it, is named ("dplab: rank R of N ... died without
           reporting an error");
  unnamed  nobody is named (e.g. the rank was killed before it had registered its watch);
  wrong    any other rank is named, by the death watch or as "rank R of N failed" (the
           property that must never happen: a survivor named instead of the killed rank);
           wrong-cma: the same, where UCX's CMA transport had crashed a survivor first.
The last column counts runs, of any verdict, in which a survivor crashed that way.
A run whose job had already finished when the kill came is not counted and is drawn again.

  tools/scripts/kill_campaign.py --dplab build/bin/dplab --ranks 2 4 8 --runs 30

With --signal stop a random rank is stopped (SIGSTOP) at a random time in the middle of the
training (after the run header, within the first half of a clean run's training time; --steps
600 of 16-step epochs, so that epoch ends and evaluations are among the places hit) with
comm.timeout_s = --timeout (default 10). Each run prints the seconds from the stop to the job's
exit, whether the message names the stopped rank ("rank R did not arrive") and which wait timed
out; the summary gives min / median / max of those seconds and how many runs ended within
timeout + 5 s (comm/stall_report.h, kEndAfterTimeoutS). A stop that came after the survivors'
last collective (they printed the test accuracy) is not mid-run: listed apart, not counted (the
job then waits in MPI_Finalize for the stopped rank; the script kills it after 120 s). Exit
status 1 when a counted run ended later, hung or named another rank.

  tools/scripts/kill_campaign.py --signal stop --ranks 2 --runs 20 --timeout 10

Needs MPICH's mpiexec (hydra) and fashion-mnist (/usr/share/datasets or DPLAB_DATA). Exit
status 1 when any run was wrong. Takes a few seconds per run.
"""
import argparse
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time


def train_command(args, n):
    cmd = [args.mpiexec, "-n", str(n), args.dplab, "train", "--model", "mnist_cnn", "--data",
           "fashion-mnist", "--algo", "allreduce", "--epochs", "1", "--batch", "16",
           "--max-steps", str(args.steps), "--wait", "backoff", "--threads", "1", "--set",
           "data.train_limit=2048", "--set", "data.test_limit=64"]
    if args.signal == "stop":
        # Several epochs (evaluations, epoch records) in the run; no progress lines.
        cmd[cmd.index("--epochs") + 1] = "100"
        cmd[cmd.index("data.train_limit=2048")] = "data.train_limit=512"
        cmd += ["--set", f"comm.timeout_s={args.timeout:g}", "--set", "progress=off"]
    return cmd


HEADER = "  device "  # the run header's last line: training starts right after it


def timed_lines(job):
    """Reads the job's output in a thread: a list of (monotonic time, line), filled as it comes."""
    lines = []

    def read():
        for raw in job.stdout:
            lines.append((time.monotonic(), raw.decode(errors="replace")))

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return lines, t


def training_window(args, n):
    """Seconds from the run header to the end of a clean run (the stop is drawn in 90% of it)."""
    job = subprocess.Popen(train_command(args, n), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    lines, reader = timed_lines(job)
    job.wait()
    reader.join()
    end = time.monotonic()
    if job.returncode != 0:
        sys.exit("baseline run failed:\n" + "".join(l for _, l in lines))
    header = [t for t, l in lines if l.startswith(HEADER)]
    if not header:
        sys.exit("baseline run printed no run header:\n" + "".join(l for _, l in lines))
    return end - header[0]


def one_stop_run(args, n, window, rng):
    victim = rng.randrange(n)
    delay = rng.uniform(0.0, 0.5 * window)  # a run up to twice as fast is still training
    job = subprocess.Popen(train_command(args, n), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, start_new_session=True)
    lines, reader = timed_lines(job)
    t0 = time.monotonic()
    while not any(l.startswith(HEADER) for _, l in lines) and job.poll() is None:
        if time.monotonic() - t0 > 120:
            break
        time.sleep(0.002)
    time.sleep(delay)
    pid = rank_pid(job.pid, victim) if job.poll() is None else None
    if pid is None:
        job.wait()
        reader.join()
        return None
    os.kill(pid, signal.SIGSTOP)
    stopped = time.monotonic()
    hung = False
    try:
        job.wait(timeout=120)
    except subprocess.TimeoutExpired:
        hung = True
        os.kill(pid, signal.SIGKILL)  # hydra gives each rank a session of its own
        job.wait()
    end = time.monotonic() - stopped
    reader.join()
    text = "".join(l for _, l in lines)
    if "test accuracy:" in text and job.returncode == 0:
        return None  # finished before the stop took effect
    if "test accuracy:" in text:  # the survivors had done their last collective: not mid-run
        return dict(victim=victim, at=delay, verdict="after training", end=end, out=text,
                    hung=hung)
    named = []
    for m in re.finditer(r"ranks? ([\d, ]+) did not arrive", text):
        named += [int(r) for r in m.group(1).replace(",", " ").split()]
    verdict = "hang" if hung else "correct" if named == [victim] else \
        "unnamed" if not named else "wrong"
    # What the survivor's timed-out wait was (where the stop hit): "allreduce(average)", ...
    waited = re.search(r"rank \d+: (.*?) did not complete within", text)
    where = re.sub(r" #\d+ of .*| over MPI_COMM_WORLD.*| \(.*", "", waited.group(1)) if waited \
        else "?"
    return dict(victim=victim, at=delay, verdict=verdict, named=named, end=end, out=text,
                where=where)


def stop_campaign(args):
    rng = random.Random(args.seed)
    bound = args.timeout + 5.0
    bad = False
    for n in args.ranks:
        window = training_window(args, n)
        print(f"{n} ranks, comm.timeout_s = {args.timeout:g}: stops drawn in the first "
              f"{0.5 * window:.2f} s of training", flush=True)
        ends, counts = [], {"correct": 0, "unnamed": 0, "wrong": 0, "hang": 0}
        while len(ends) < args.runs:
            r = one_stop_run(args, n, window, rng)
            if r is None:
                continue
            if r["verdict"] == "after training":
                print(f"  (not counted: stopped rank {r['victim']} {r['at']:.2f} s into training,"
                      f" after the survivors' last collective; job "
                      f"{'hung' if r['hung'] else 'ended'} {r['end']:.2f} s later)", flush=True)
                continue
            ends.append(r["end"])
            counts[r["verdict"]] += 1
            print(f"  run {len(ends):>2}: stopped rank {r['victim']} {r['at']:.2f} s into training;"
                  f" job ended {r['end']:.2f} s later; {r['verdict']} (named {r['named']});"
                  f" timed out in {r['where']}",
                  flush=True)
            if r["verdict"] != "correct" or r["end"] > bound:
                bad = True
                if args.show:
                    print(r["out"])
        within = sum(e <= bound for e in ends)
        print(f"{n} ranks: {len(ends)} runs, stop to exit min {min(ends):.2f} s, median "
              f"{statistics.median(ends):.2f} s, max {max(ends):.2f} s; {within} of {len(ends)} "
              f"within {bound:g} s; named correctly {counts['correct']}, unnamed "
              f"{counts['unnamed']}, wrong {counts['wrong']}, hung {counts['hang']}", flush=True)
    return 1 if bad else 0


def proc_ppid_and_comm(pid):
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    comm = stat[stat.index("(") + 1:stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[1]), comm  # ppid, comm


def rank_pid(mpiexec_pid, rank):
    """The pid of `rank` of the job started as `mpiexec_pid`: a child of that mpiexec's
    hydra_pmi_proxy (not a watcher, which is a child of its rank) whose environment has
    PMI_RANK=rank. (Hydra gives the proxy and every rank a session of its own.)"""
    want = f"PMI_RANK={rank}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            ppid, _ = proc_ppid_and_comm(pid)
            grand, parent_comm = proc_ppid_and_comm(ppid)
            if parent_comm != "hydra_pmi_proxy" or grand != mpiexec_pid:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if want in f.read().split(b"\0"):
                    return pid
        except (OSError, ValueError, IndexError):
            continue
    return None


def one_run(args, n, window, rng):
    victim = rng.randrange(n)
    delay = rng.uniform(args.earliest, window if args.latest is None else args.latest)
    t0 = time.monotonic()
    job = subprocess.Popen(train_command(args, n), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, start_new_session=True)
    time.sleep(delay)
    pid = None
    while pid is None and job.poll() is None and time.monotonic() - t0 < delay + 20:
        pid = rank_pid(job.pid, victim)
        if pid is None:
            time.sleep(0.002)
    killed_at = time.monotonic() - t0
    if pid is None:  # the job ended first (or the rank never appeared)
        job.communicate()
        return None
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:  # exited between the lookup and the kill: finished
        job.communicate()
        return None
    try:
        out, _ = job.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        out, _ = job.communicate()
        return dict(victim=victim, at=killed_at, verdict="hang", named=[], end=120.0,
                    out=out.decode(errors="replace"), cma=False)
    end = time.monotonic() - t0 - killed_at
    text = out.decode(errors="replace")
    if "test accuracy:" in text and job.returncode == 0:
        return None  # it had finished (the kill hit a rank on its way out)
    # Named as dead: by its watcher ("rank R of N (pid P on HOST) died without reporting") or by a
    # survivor that stopped after it ("rank R of N died without reporting ...; rank S then
    # stopped"). Named as failed: "rank S of N failed".
    watch = sorted({int(r) for r in re.findall(r"dplab: rank (\d+) of \d+ (?:\(pid [^)]*\) )?died", text)})
    failed = [int(r) for r in re.findall(r"dplab: rank (\d+) of \d+ failed", text)]
    if watch == [victim] and not failed:
        verdict = "correct"
    elif not watch and not failed:
        verdict = "unnamed"
    elif "process_vm_readv" in text:
        # UCX's CMA transport read the dying rank's memory, failed, and aborted a survivor, whose
        # death the kernel then completed first (see comm/death_watch.h, "Limits").
        verdict = "wrong-cma"
    else:
        verdict = "wrong"
    return dict(victim=victim, at=killed_at, verdict=verdict, named=watch + failed, end=end,
                out=text, cma="process_vm_readv" in text)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dplab", default="build/bin/dplab")
    p.add_argument("--mpiexec", default="mpiexec")
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    p.add_argument("--runs", type=int, default=30, help="counted runs per rank count")
    p.add_argument("--steps", type=int, default=40,
                   help="optimizer steps per run (600 with --signal stop)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--earliest", type=float, default=0.0, help="earliest kill, s after launch")
    p.add_argument("--latest", type=float, help="latest kill (default: 95%% of a clean run)")
    p.add_argument("--show", action="store_true", help="print the output of runs not correct")
    p.add_argument("--keep", help="directory to write the output of runs not correct into")
    p.add_argument("--signal", choices=["kill", "stop"], default="kill",
                   help="SIGKILL (the death watch) or SIGSTOP (the timeout and stall report)")
    p.add_argument("--timeout", type=float, default=10.0, help="comm.timeout_s for --signal stop")
    args = p.parse_args()
    if args.signal == "stop":
        if "--steps" not in sys.argv:
            args.steps = 600
        return stop_campaign(args)
    rng = random.Random(args.seed)
    any_wrong = False
    print(f"{'ranks':>5} {'runs':>5} {'correct':>8} {'unnamed':>8} {'wrong':>6} {'wrong-cma':>9} "
          f"{'hang':>5} {'max s to end':>12} {'cma crashes':>11}")
    for n in args.ranks:
        t0 = time.monotonic()
        base = subprocess.run(train_command(args, n), capture_output=True)
        duration = time.monotonic() - t0
        if base.returncode != 0:
            sys.exit(f"baseline run at {n} ranks failed:\n{base.stdout.decode()}{base.stderr.decode()}")
        counts = {"correct": 0, "unnamed": 0, "wrong": 0, "wrong-cma": 0, "hang": 0, "cma": 0}
        slowest = 0.0
        done = 0
        while done < args.runs:
            r = one_run(args, n, 0.95 * duration, rng)
            if r is None:
                continue
            done += 1
            counts[r["verdict"]] += 1
            counts["cma"] += r["cma"]
            slowest = max(slowest, r["end"])
            if r["verdict"] != "correct":
                print(f"  {n} ranks: killed rank {r['victim']} at {r['at']:.2f} s: {r['verdict']}"
                      f" (named {r['named']})", flush=True)
                if args.show:
                    print(r["out"])
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    name = f"{n}ranks-run{done}-rank{r['victim']}-{r['verdict']}.txt"
                    with open(os.path.join(args.keep, name), "w") as f:
                        f.write(f"killed rank {r['victim']} at {r['at']:.3f} s\n{r['out']}")
        any_wrong |= counts["wrong"] + counts["wrong-cma"] + counts["hang"] > 0
        print(f"{n:>5} {done:>5} {counts['correct']:>8} {counts['unnamed']:>8} {counts['wrong']:>6} "
              f"{counts['wrong-cma']:>9} {counts['hang']:>5} {slowest:>12.1f} {counts['cma']:>11}",
              flush=True)
    return 1 if any_wrong else 0


if __name__ == "__main__":
    sys.exit(main())
