#!/usr/bin/python3
"""The studies' own selection and preparation scripts against hand-made inputs:
studies/crossover/select_lr.py (the lr chosen per method and workers, and where the sweep must
widen), studies/lib/scale_profile.py (a compute profile's times x a factor), and the
crossover and oscars summaries' derived columns, lib/common.sh's output directory, and the run
folders stored as one archive per study (lib/runs_archive.py, lib/pack_runs.sh, common.sh's
study_expand_runs).

Usage: test_study_scripts.py REPO_ROOT
"""
import contextlib
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

ROOT = pathlib.Path(sys.argv.pop(1) if len(sys.argv) > 1 else ".").resolve()
SELECT_LR = ROOT / "studies/crossover/select_lr.py"
SCALE = ROOT / "studies/lib/scale_profile.py"
SUMMARIZE = ROOT / "studies/crossover/summarize.py"
OSCARS_SUMMARIZE = ROOT / "studies/oscars/summarize.py"
FAULTS_SUMMARIZE = ROOT / "studies/faults/summarize.py"
RUNS_ARCHIVE = ROOT / "studies/lib/runs_archive.py"
PACK_RUNS = ROOT / "studies/lib/pack_runs.sh"
sys.path.insert(0, str(ROOT / "studies/lib"))
import runs_archive  # noqa: E402


def run(*args):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True)


def sweep_run(root, method, w, lr, acc=None, failed=False):
    """One finished sweep run: done, and a metrics.jsonl whose final record has test_acc."""
    d = root / method / f"W{w}" / f"lr{lr}" / "seed0"
    d.mkdir(parents=True)
    (d / "done").touch()
    if failed:
        (d / "failed").touch()
        return
    (d / "metrics.jsonl").write_text(
        json.dumps({"kind": "epoch", "epoch": 1, "test_acc": acc}) + "\n"
        + json.dumps({"kind": "final", "test_acc": acc}) + "\n")


class SelectLr(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def grid(self, method, w, accs, **kw):
        for lr, acc in accs.items():
            sweep_run(self.root, method, w, lr, acc, **kw)

    def test_picks_the_best_and_ties_keep_the_smaller_lr(self):
        self.grid("a", 8, {"0.05": 0.5, "0.1": 0.7, "0.2": 0.6})
        self.grid("b", 16, {"0.05": 0.5, "0.1": 0.8, "0.2": 0.8})
        r = run(SELECT_LR, self.root)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines(), ["a W8 0.1 0.7000", "b W16 0.1 0.8000"])

    def test_widens_only_where_the_best_is_at_an_edge_and_inside_the_bounds(self):
        self.grid("interior", 8, {"0.05": 0.5, "0.1": 0.7, "0.2": 0.6})
        self.grid("top", 8, {"0.05": 0.5, "0.1": 0.6, "0.2": 0.7})
        self.grid("bottom", 8, {"0.05": 0.7, "0.1": 0.6, "0.2": 0.5})
        r = run(SELECT_LR, self.root, "--extend", 0.0125, 1.6)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(r.stdout.splitlines()), ["bottom W8 0.025", "top W8 0.4"])
        # At a bound: 0.4 > 0.3 and 0.025 < 0.03, so nothing is left to run.
        r = run(SELECT_LR, self.root, "--extend", 0.03, 0.3)
        self.assertEqual(r.stdout, "")

    def test_a_failed_run_counts_as_the_worst(self):
        self.grid("m", 8, {"0.05": 0.5, "0.1": 0.6, "0.2": 0.7})
        sweep_run(self.root, "m", 8, "0.4", failed=True)  # diverged: no metrics at all
        self.assertEqual(run(SELECT_LR, self.root, "--extend", 0.0125, 1.6).stdout, "")
        self.assertEqual(run(SELECT_LR, self.root).stdout, "m W8 0.2 0.7000\n")

    def test_bad_bounds_are_named(self):
        self.grid("m", 8, {"0.1": 0.5})
        r = run(SELECT_LR, self.root, "--extend", "low", 1.6)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("expected two numbers", r.stderr)


class ScaleProfile(unittest.TestCase):
    def test_times_scale_and_ready_fractions_stay(self):
        with tempfile.TemporaryDirectory() as t:
            src, dst = pathlib.Path(t, "p.json"), pathlib.Path(t, "q.json")
            seg = [{"name": "fc.weight", "numel": 640, "ready_fraction": 0.25}]
            src.write_text(json.dumps({"forward_s": 0.008, "backward_s": 0.016,
                                       "optimizer_s": 0.0005, "check_s": 0.002, "batch": 16,
                                       "segments": seg}))
            r = run(SCALE, src, 0.1, dst)
            self.assertEqual(r.returncode, 0, r.stderr)
            q = json.loads(dst.read_text())
            self.assertAlmostEqual(q["forward_s"], 0.0008, delta=1e-15)
            self.assertAlmostEqual(q["backward_s"], 0.0016, delta=1e-15)
            self.assertAlmostEqual(q["optimizer_s"], 0.00005, delta=1e-15)
            self.assertAlmostEqual(q["check_s"], 0.0002, delta=1e-15)
            self.assertEqual(q["segments"], seg)
            self.assertEqual(q["batch"], 16)
            self.assertEqual(q["scaled_by"], 0.1)

    def test_bad_inputs_are_named(self):
        with tempfile.TemporaryDirectory() as t:
            src, dst = pathlib.Path(t, "p.json"), pathlib.Path(t, "q.json")
            src.write_text(json.dumps({"forward_s": 0.008}))
            r = run(SCALE, src, 0.1, dst)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(f"{src}: no 'backward_s'", r.stderr)
            r = run(SCALE, src, "0", dst)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("FACTOR: expected a number > 0, got '0'", r.stderr)



class CrossoverPairedDifferences(unittest.TestCase):
    """summarize.py's differences paired by seed: only seeds both methods have, hand values."""

    def test_pairs_by_seed_and_skips_unpaired_seeds(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            accs = {"crossover": {0: 0.80, 1: 0.90, 2: 0.70}, "sgp": {0: 0.75, 1: 0.88}}
            for m, by_seed in accs.items():
                for seed, acc in by_seed.items():
                    d = root / m / "W8" / f"seed{seed}"
                    d.mkdir(parents=True)
                    (d / "done").touch()
                    (d / "metrics.jsonl").write_text(
                        json.dumps({"kind": "epoch", "epoch": 1, "test_acc": acc, "time_s": 1.0})
                        + "\n" + json.dumps({"kind": "final", "test_acc": acc}) + "\n")
            out = root / "results.md"
            r = run(SUMMARIZE, root, out)
            self.assertEqual(r.returncode, 0, r.stderr)
            row = [ln for ln in out.read_text().splitlines() if ln.startswith("| 8 |")]
            self.assertEqual(len(row), 1, out.read_text())
            # seed 0: 0.80 - 0.75 = 0.05; seed 1: 0.90 - 0.88 = 0.02; seed 2 has no SGP run.
            self.assertEqual(row[0].split(" | ")[1], "0.0350 [0.0200, 0.0500] (2)")

class CrossoverLrCheck(unittest.TestCase):
    """summarize.py's lr-check section: a method at another lr beside its main runs at the
    chosen lr (chosen_lr.txt), hand values."""

    def test_other_lr_beside_the_chosen_one(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            for sub, acc in (("lr_check/crossover/W64/lr0.2/seed0", 0.74),
                             ("lr_check/crossover/W64/lr0.2/seed1", 0.76),
                             ("crossover/W64/seed0", 0.65)):
                d = root / sub
                d.mkdir(parents=True)
                (d / "done").touch()
                (d / "metrics.jsonl").write_text(
                    json.dumps({"kind": "epoch", "epoch": 1, "test_acc": acc, "time_s": 1.0})
                    + "\n" + json.dumps({"kind": "final", "test_acc": acc}) + "\n")
            (root / "chosen_lr.txt").write_text("crossover W64 0.4 0.537\n")
            out = root / "results.md"
            r = run(SUMMARIZE, root, out)
            self.assertEqual(r.returncode, 0, r.stderr)
            rows = [ln for ln in out.read_text().splitlines()
                    if ln.startswith("| Crossover-SGD | 64 | 0.2 |")]
            self.assertEqual(rows, ["| Crossover-SGD | 64 | 0.2 | 2 | 0.7500 [0.7400, 0.7600] | "
                                    "0.4: 0.6500 |"], out.read_text())


class StudyOutDir(unittest.TestCase):
    """lib/common.sh's study_out_dir: OUT wins (a variant's tables must not overwrite the
    study's), else the study directory, or the runs directory of a smoke run."""

    def out_dir(self, quick, out=None):
        env = {"PATH": "/usr/bin:/bin", "QUICK": quick}
        if out:
            env["OUT"] = out
        r = subprocess.run(["bash", "-c", f"source {ROOT}/studies/lib/common.sh && "
                            "study_out_dir /study"], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.strip()

    def test_out_wins_else_the_study_or_the_smoke_runs(self):
        self.assertEqual(self.out_dir("0"), "/study")
        self.assertEqual(self.out_dir("1"), "/study/runs_quick")
        self.assertEqual(self.out_dir("0", "/variant"), "/variant")
        self.assertEqual(self.out_dir("1", "/variant"), "/variant")


class OscarsPerRankWaits(unittest.TestCase):
    """summarize.py's last-epoch table: every rank's predicted wait (rank 0's record holds all)
    against its measured exposed wait per round of the last epoch, hand values."""

    def test_predicted_and_measured_wait_per_rank(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            # seed: (rank 1's predicted wait in us, rank 1's last-epoch exposed wait in s)
            for seed, (pred1, wait1) in {0: (2000.0, 0.040), 1: (4000.0, 0.080)}.items():
                d = root / "r2" / "oscars" / f"seed{seed}"
                d.mkdir(parents=True)
                (d / "done").touch()
                algo = {"algo.tau_r0": 3.0, "algo.tau_r1": 2.0, "algo.wait_pred_us_r0": 0.0,
                        "algo.wait_pred_us_r1": pred1}
                recs = [{"kind": "epoch", "epoch": e, "test_acc": 0.5, "time_s": 1.0,
                         "algo.rounds": rounds, **algo} for e, rounds in ((1, 10.0), (2, 30.0))]
                (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
                for rank, wait in ((0, 0.010), (1, wait1)):
                    (d / f"rank_{rank}.jsonl").write_text(json.dumps(
                        {"kind": "rank_epoch", "epoch": 2, "rank": rank, "slowdown": 1.0 + rank,
                         "comm_exposed_wait_s": wait, "idle_fraction": 0.1}) + "\n")
            out = root / "results.md"
            r = run(OSCARS_SUMMARIZE, root, out, "0.9")
            self.assertEqual(r.returncode, 0, r.stderr)
            rows = {ln.split(" | ")[0]: ln.split(" | ") for ln in out.read_text().splitlines()
                    if ln.startswith("| 0 |") or ln.startswith("| 1 |")}
            # the last epoch holds 30 - 10 = 20 rounds: rank 1 waits 40 / 20 = 2 ms (seed 0)
            # and 80 / 20 = 4 ms (seed 1), predicted 2 and 4 ms; rank 0 0.5 ms, predicted 0
            self.assertEqual(rows["| 1"][3:5], ["3.00 [2.00, 4.00]", "3.00 [2.00, 4.00]"])
            self.assertEqual(rows["| 0"][3:5], ["0.00 [0.00, 0.00]", "0.50 [0.50, 0.50]"])


class RunsArchive(unittest.TestCase):
    """lib/runs_archive.py against a tiny study: runs.list names two folders, runs.tar.xz holds
    them; an absent folder is expanded with its files, a present one is left as it is, a path
    outside the listed folders expands nothing, a missing archive is named."""

    FILES = {"runs_vc/m/seed0/metrics.jsonl": '{"kind": "epoch", "epoch": 1}\n',
             "runs_vc/m/seed0/done": "",
             "runs_vc/chosen_lr.txt": "m W8 0.1 0.5\n",
             "old/runs/a/metrics.jsonl": '{"kind": "final"}\n'}

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.study = pathlib.Path(self.tmp.name).resolve() / "study"
        (self.study / "configs").mkdir(parents=True)
        (self.study / "runs.list").write_text("# comment\nruns_vc\nold/runs/\n")
        with tarfile.open(self.study / "runs.tar.xz", "w:xz") as tar:
            for name, text in self.FILES.items():
                info = tarfile.TarInfo(name)
                info.size = len(text.encode())
                tar.addfile(info, io.BytesIO(text.encode()))

    def tearDown(self):
        self.tmp.cleanup()

    def ensure(self, path):
        """runs_archive.ensure(path), its notes on stderr checked: one per folder expanded."""
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            done = runs_archive.ensure(path)
        self.assertEqual(err.getvalue().splitlines(),
                         [f"expanded {self.study / f}/ from {self.study / 'runs.tar.xz'}"
                          for f in done])
        return done

    def files(self):
        return {str(p.relative_to(self.study)): p.read_text()
                for p in self.study.rglob("*") if p.is_file()
                and p.name not in ("runs.list", "runs.tar.xz")}

    def test_absent_folders_are_expanded_with_their_files(self):
        self.assertEqual(self.ensure(self.study / "runs_vc"), ["runs_vc", "old/runs"])
        self.assertEqual(self.files(), self.FILES)
        self.assertEqual(sorted(p.name for p in self.study.iterdir()),  # no temporary left
                         ["configs", "old", "runs.list", "runs.tar.xz", "runs_vc"])
        self.assertEqual(self.ensure(self.study / "runs_vc"), [])  # already there

    def test_a_present_folder_is_untouched(self):
        mine = self.study / "runs_vc" / "new" / "seed0" / "done"
        mine.parent.mkdir(parents=True)
        mine.write_text("a run not yet packed")
        # the study directory holds every listed folder: the absent one is expanded
        self.assertEqual(self.ensure(self.study), ["old/runs"])
        self.assertEqual(self.files(), {"runs_vc/new/seed0/done": "a run not yet packed",
                                        "old/runs/a/metrics.jsonl": '{"kind": "final"}\n'})

    def test_paths_outside_the_listed_folders_expand_nothing(self):
        self.assertEqual(self.ensure(self.study / "configs"), [])
        self.assertEqual(self.ensure(pathlib.Path(self.tmp.name, "elsewhere")), [])
        self.assertEqual(self.files(), {})

    def test_a_missing_archive_is_named(self):
        (self.study / "runs.tar.xz").unlink()
        with self.assertRaises(FileNotFoundError) as e:
            self.ensure(self.study / "runs_vc" / "m")
        self.assertIn(f"{self.study / 'runs.tar.xz'}: no such archive", str(e.exception))
        r = run(RUNS_ARCHIVE, self.study / "runs_vc")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"{self.study / 'runs.tar.xz'}: no such archive", r.stderr)
        self.assertEqual(self.files(), {})

    def test_concurrent_expansions_leave_whole_folders(self):
        procs = [subprocess.Popen([sys.executable, str(RUNS_ARCHIVE), str(self.study)],
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        notes = []
        for pr in procs:
            notes += pr.communicate()[1].splitlines()
            self.assertEqual(pr.returncode, 0, notes)
        self.assertEqual(self.files(), self.FILES)
        self.assertEqual(len(notes), 2, notes)  # each folder renamed into place once
        self.assertEqual(sorted(p.name for p in self.study.iterdir()),
                         ["configs", "old", "runs.list", "runs.tar.xz", "runs_vc"])

    def test_common_sh_study_expand_runs(self):
        r = subprocess.run(["bash", "-c", f"source {ROOT}/studies/lib/common.sh && "
                            'study_expand_runs "$1"', "-", str(self.study / "runs_vc")],
                           capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.files(), self.FILES)

    @unittest.skipUnless(shutil.which("tar") and shutil.which("xz"), "needs tar and xz")
    def test_pack_runs_is_deterministic_and_leaves_weights_out(self):
        self.ensure(self.study)
        (self.study / "runs_vc" / "m" / "seed0" / "final.safetensors").write_bytes(b"w")
        (self.study / "runs_vc" / "m" / "seed0" / "checkpoints").mkdir()
        (self.study / "runs_vc" / "m" / "seed0" / "checkpoints" / "c").write_bytes(b"c")
        os.chmod(self.study / "runs_vc" / "chosen_lr.txt", 0o600)
        env = {"PATH": "/usr/bin:/bin"}
        r = subprocess.run([str(PACK_RUNS), str(self.study)], capture_output=True, text=True,
                           env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        first = (self.study / "runs.tar.xz").read_bytes()
        with tarfile.open(self.study / "runs.tar.xz") as tar:
            names = sorted(m.name for m in tar.getmembers() if m.isfile())
            self.assertTrue(all(m.mtime == 0 and m.uid == 0 for m in tar.getmembers()))
            self.assertEqual(tar.getmember("runs_vc/chosen_lr.txt").mode, 0o644)
        self.assertEqual(names, sorted(self.FILES))
        # packed again from a fresh expansion: the same bytes
        shutil.rmtree(self.study / "runs_vc")
        shutil.rmtree(self.study / "old")
        r = subprocess.run([str(PACK_RUNS), str(self.study)], capture_output=True, text=True,
                           env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual((self.study / "runs.tar.xz").read_bytes(), first)
        self.assertEqual(self.files(), self.FILES)


class FaultsRestart(unittest.TestCase):
    """studies/faults/summarize.py: the stopped AllReduce's restart placed after the node's
    return, and the rank-seconds each kind of run loses, against hand arithmetic."""

    def write(self, d, records):
        d.mkdir(parents=True, exist_ok=True)
        (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))

    def test_restart_after_the_return_and_the_losses(self):
        with tempfile.TemporaryDirectory() as tmp:
            runs = pathlib.Path(tmp) / "runs"
            events = pathlib.Path(tmp) / "fail.toml"
            events.write_text('[[event]]\nkind = "fail"\nnodes = [3]\nfrom_s = 20\nfor_s = 300\n')
            stopped = runs / "fail/allreduce/seed0"
            # Stops at 20.5 s having lost 9.5 s: its checkpoint is at 11 s of virtual time.
            self.write(stopped, [{"kind": "stopped", "virtual_time_s": 20.5, "lost_s": 9.5}])
            (stopped / "command.txt").write_text(f"dplab train --set cluster.events={events}\n")
            # The restart's clock goes on from 11 s: its epoch ends at 60 and 100 s.
            self.write(stopped / "restart", [
                {"kind": "epoch", "epoch": 1, "elapsed_s": 60.0, "test_acc": 0.7},
                {"kind": "epoch", "epoch": 2, "elapsed_s": 100.0, "test_acc": 0.81},
                {"kind": "final", "total_time_s": 400.0, "test_acc": 0.81}])
            (stopped / "done").touch()
            quorum = runs / "fail/allreduce_quorum/seed0"
            self.write(quorum, [
                {"kind": "epoch", "epoch": 1, "elapsed_s": 52.0, "test_acc": 0.85},
                {"kind": "final", "total_time_s": 415.0, "test_acc": 0.85,
                 "failure_lost_rank_s": 1200.0, "recovery_s": 0.25}])
            (quorum / "done").touch()
            r = run(FAULTS_SUMMARIZE, runs, "--target", "0.8", "--restart-s", "5")
            self.assertEqual(r.returncode, 0, r.stderr)
            rows = {line.split("|")[2].strip(): [c.strip() for c in line.split("|")[3:]]
                    for line in r.stdout.splitlines() if line.startswith("| fail |")
                    and line.count("|") == 11}
            ar = rows["AllReduce (stops; restarts from its checkpoint when the node is back)"]
            # shift = return (320) + restart 5 - checkpoint 11 = 314
            self.assertEqual(ar[1], "414.0")  # time to 0.80: 100 + 314
            self.assertEqual(ar[3], "714.0")  # total: 400 + 314
            self.assertEqual(ar[6], "10048")  # 32 ranks x 314 s
            self.assertEqual(ar[7], "5.000")  # the assumed restart
            q = rows["AllReduce, quorum (torchft's FT-DDP)"]
            self.assertEqual(q[1], "52.0")
            self.assertEqual(q[6], "1200")
            self.assertEqual(q[7], "0.250")
            joined = [json.loads(x) for x in
                      (stopped / "joined_metrics.jsonl").read_text().splitlines()]
            self.assertEqual([e["elapsed_s"] for e in joined], [374.0, 414.0])


if __name__ == "__main__":
    unittest.main()
