#!/usr/bin/env python3
"""Fault campaign on `attnbench run`'s results writing: it kills, damages and
interrupts runs in every way docs/results.md ("Writing, resuming and locking")
covers, and checks after each that no finished record was lost or
duplicated, that every file left is one attnbench reads, that a refusal left
the files as they were, and that no message advises --overwrite without
saying it discards records.

    scripts/fault_campaign.py --binary build/harness/attnbench \\
        --faults build/tests/libattnbench_syscall_faults.so [--seed N] [--quick]

The faults library (tests/syscall_faults.cpp, built with the tests) is
preloaded to kill the run at a chosen system call. Mounting a full or
read-only file system (tmpfs) needs root; without it those trials are
skipped and counted as such. It prints one line per kind of trial and the
counts; it exits 1 when a trial fails. Its 130 trials took 10 to 20 minutes
on the 2-core development VM at load averages of 10 to 14 (--quick: a third
of the random trials).
"""
import argparse
import json
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

CASES = 8


def crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    return table


CRC32C_TABLE = crc32c_table()


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli) of `data`, as the journal's checksums use."""
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc = CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def journal_line(entry, run_id):
    """A journal line for `entry` (a dict whose first key is "seq"), as attnbench writes it."""
    rest = json.dumps(entry, separators=(",", ":"), ensure_ascii=False)[1:]
    checksum = crc32c(run_id.encode() + rest.encode())
    return '{"crc32c":"%08x",%s\n' % (checksum, rest)


def scenario(cases=CASES, warmup=0.01):
    return {"name": "sweep", "description": "fault campaign",
            "defaults": {"batch": 1, "heads": 1, "head_dim": 32, "direction": "fwd"},
            "sweep": {"seqlen": [16 + i for i in range(cases)]},
            "implementations": ["cpu.flash"], "accuracy": {"check": False},
            "measure": {"cache": "hot", "warmup_min_iterations": 0, "warmup_min_seconds": warmup,
                        "min_samples": 2, "max_samples": 3, "min_seconds": 0, "max_seconds": 0.02}}


class Campaign:
    def __init__(self, binary, faults, seed):
        self.binary = str(binary)
        self.faults = str(faults)
        self.random = random.Random(seed)
        self.counts = {}  # kind -> [passed, failed, skipped]
        self.failures = []
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="attnbench_campaign_"))
        self.serial = 0

    # ---- running ----
    def fresh(self):
        self.serial += 1
        directory = self.root / str(self.serial)
        directory.mkdir()
        (directory / "s.json").write_text(json.dumps(scenario()))
        return directory

    def environment(self, signal_at=None, extra=None):
        env = dict(os.environ)
        if signal_at:
            env["LD_PRELOAD"] = self.faults
            env["ATTNBENCH_FAULTS_SIGNAL"] = signal_at
        env.update(extra or {})
        return env

    def start(self, directory, output="r.json", extra=(), signal_at=None, env=None, stdout=None):
        arguments = [self.binary, "run", str(directory / "s.json"), "-o", str(directory / output), *extra]
        return subprocess.Popen(arguments, stdout=stdout or subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=env or self.environment(signal_at), cwd=directory)

    def run(self, directory, output="r.json", extra=(), signal_at=None, env=None):
        process = self.start(directory, output, extra, signal_at, env)
        text = process.communicate()[0].decode(errors="replace")
        return process.returncode, text

    def resume(self, directory, output="r.json"):
        return self.run(directory, output, ["--resume"])

    # ---- checking ----
    def record(self, kind, ok, detail=""):
        counts = self.counts.setdefault(kind, [0, 0, 0])
        counts[0 if ok else 1] += 1
        if not ok:
            self.failures.append(f"{kind}: {detail}")

    def skip(self, kind):
        self.counts.setdefault(kind, [0, 0, 0])[2] += 1

    @staticmethod
    def load(path):
        return json.loads(pathlib.Path(path).read_text())

    def finished_once(self, directory, output="r.json", cases=CASES):
        """'' when `output` is complete with every case once, else what is wrong."""
        try:
            results = self.load(directory / output)
        except (OSError, ValueError) as error:
            return f"unreadable: {error}"
        keys = [record["case_key"] for record in results["records"]]
        if not results["complete"]:
            return "not complete"
        if len(keys) != cases or len(set(keys)) != cases:
            return f"{len(keys)} records, {len(set(keys))} distinct"
        left = [p.name for p in directory.iterdir() if p.name.startswith(output + ".")]
        return f"left behind: {left}" if left else ""

    def resume_to_the_end(self, directory, output="r.json", cases=CASES):
        code, text = self.resume(directory, output)
        if code != 0:
            return f"resume exited {code}: {text[-600:]}"
        return self.finished_once(directory, output, cases)

    @staticmethod
    def overwrite_advice_problem(text):
        for line in text.splitlines():
            if "--overwrite" in line and "discard" not in line:
                return f"advises --overwrite without saying it discards: {line}"
        return ""

    def snapshot(self, directory):
        """The results file and its journal as they are (the lock file and temporaries aside)."""
        return {p.name: (p.read_bytes() if p.is_file() else None) for p in directory.iterdir()
                if p.name in ("r.json", "r.json.journal")}

    # ---- an unfinished run to damage: RESULTS with records, a journal with more ----
    def unfinished(self):
        directory = self.fresh()
        self.run(directory, signal_at="write:r.json.journal:3:9")  # two cases journaled, then killed
        self.run(directory, extra=["--resume"], signal_at="write:r.json.journal:4:9")  # 2 in RESULTS, 3 journaled
        return directory

    # ---- the kinds of trial ----
    def random_kills(self, trials):
        for trial in range(trials):
            directory = self.fresh()
            for attempt in range(40):
                process = self.start(directory, extra=["--resume"])
                time.sleep(self.random.uniform(0, 0.15 + 0.02 * attempt))
                process.kill()
                process.communicate()
                problem = self.whole_files(directory)
                if problem:
                    break
                if process.returncode == 0:
                    break
            problem = problem or self.resume_to_the_end(directory)
            self.record("kill -9 at a random moment", not problem, f"trial {trial}: {problem}")

    def whole_files(self, directory):
        results, journal = directory / "r.json", directory / "r.json.journal"
        if results.exists():
            try:
                self.load(results)
            except ValueError as error:
                return f"r.json not whole: {error}"
        if journal.exists():
            lines = journal.read_bytes().split(b"\n")
            whole = lines[:-1]
            for number, line in enumerate(whole, 1):
                try:
                    json.loads(line)
                except ValueError:
                    return f"journal line {number} not whole"
        return ""

    PINNED = [("write", "r.json.journal", 1), ("write", "r.json.journal", 3), ("fdatasync", "r.json.journal", 2),
              ("rename", "/r.json", 1), ("rename", "/r.json", 2), ("rename", "r.json.journal", 1),
              ("unlink", "r.json.journal", 1), ("fsync", "r.json.tmp.%p", 1), ("open", "r.json.tmp.%p", 2)]

    def pinned_kills(self):
        for call, suffix, nth in self.PINNED:
            where = f"{call}:{suffix}:{nth}"
            for resumed in (False, True):
                directory = self.unfinished() if resumed else self.fresh()
                code, text = self.run(directory, extra=["--resume"], signal_at=f"{where}:9")
                problem = self.whole_files(directory) or self.resume_to_the_end(directory)
                kind = "kill -9 at a pinned system call" + (" of a resume" if resumed else "")
                self.record(kind, not problem, f"{where}: {problem}")

    def damage_trials(self):
        other = self.unfinished()  # another run with the same settings
        other_lines = (other / "r.json.journal").read_text().splitlines(keepends=True)
        for name, damage, expected in self.DAMAGES:
            directory = self.unfinished()
            journal = directory / "r.json.journal"
            lines = journal.read_text().splitlines(keepends=True)
            header = json.loads(lines[0])
            try:
                damage(self, directory, journal, lines, header, other_lines)
            except OSError as error:
                self.record("journal or file damage", False, f"{name}: could not damage: {error}")
                continue
            before = self.snapshot(directory)
            code, text = self.resume(directory)
            if expected == "refused":
                problem = ""
                if code != 2:
                    problem = f"exit {code}, expected 2: {text[-400:]}"
                elif self.snapshot(directory) != before:
                    problem = "a refusal changed the files"
                elif "internal error" in text:
                    problem = text[-400:]
                problem = problem or self.overwrite_advice_problem(text)
            else:
                problem = f"exit {code}: {text[-400:]}" if code != 0 else self.finished_once(directory)
            self.record("journal or file damage", not problem, f"{name}: {problem}")

    # Each: (name, damage(campaign, directory, journal, lines, header, other_lines), "accepted" or "refused")
    DAMAGES = [
        ("journal emptied", lambda c, d, j, l, h, o: j.write_text(""), "accepted"),
        ("journal cut inside its header", lambda c, d, j, l, h, o: j.write_text(l[0][:40]), "accepted"),
        ("journal cut after its header", lambda c, d, j, l, h, o: j.write_text(l[0]), "accepted"),
        ("journal cut inside its last line", lambda c, d, j, l, h, o: j.write_text("".join(l)[:-30]), "accepted"),
        ("journal cut at a middle line", lambda c, d, j, l, h, o: j.write_text("".join(l[:2])), "accepted"),
        ("NUL bytes after the last line", lambda c, d, j, l, h, o: j.write_bytes(j.read_bytes() + b"\0" * 512),
         "accepted"),
        ("results file deleted, journal kept",
         lambda c, d, j, l, h, o: (d / "r.json").unlink(), "accepted"),
        ("a byte of a record changed", lambda c, d, j, l, h, o: j.write_text(
            "".join(l[:-1]) + l[-1].replace('"samples_seconds":[', '"samples_seconds":[9,', 1)), "refused"),
        ("a byte of the header changed", lambda c, d, j, l, h, o: j.write_text(
            l[0].replace('"threads":', '"threads": ', 1) + "".join(l[1:])), "refused"),
        ("a middle line removed", lambda c, d, j, l, h, o: j.write_text(l[0] + "".join(l[2:])), "refused"),
        ("a line repeated", lambda c, d, j, l, h, o: j.write_text("".join(l) + l[-1]), "refused"),
        ("two lines swapped", lambda c, d, j, l, h, o: j.write_text(l[0] + l[2] + l[1] + "".join(l[3:])), "refused"),
        ("a line of another run's journal", lambda c, d, j, l, h, o: j.write_text("".join(l) + o[-1]), "refused"),
        ("another run's whole journal", lambda c, d, j, l, h, o: j.write_text("".join(o)), "refused"),
        ("a line that is not JSON", lambda c, d, j, l, h, o: j.write_text("".join(l) + "not json\n"), "refused"),
        ("an empty line", lambda c, d, j, l, h, o: j.write_text("".join(l) + "\n"), "refused"),
        ("a zeroed block ending in a newline", lambda c, d, j, l, h, o: j.write_bytes(
            j.read_bytes() + b"\0" * 4095 + b"\n"), "refused"),
        ("a forged record of another scenario (checksum recomputed)", lambda c, d, j, l, h, o: j.write_text(
            "".join(l) + journal_line(c.forged_record(l, h, scenario="elsewhere"), h["run_id"])), "refused"),
        ("a forged sample (checksum recomputed)", lambda c, d, j, l, h, o: j.write_text(
            "".join(l) + journal_line(c.forged_record(l, h, sample=4.4), h["run_id"])), "refused"),
        ("a forged header with other threads (checksum recomputed)", lambda c, d, j, l, h, o: j.write_text(
            journal_line(dict(h, run=dict(h["run"], threads=h["run"]["threads"] + 1)), h["run_id"]) + "".join(l[1:])),
         "refused"),
        ("the journal of an older attnbench", lambda c, d, j, l, h, o: j.write_text(
            json.dumps({"journal": "attnbench.journal/1", "run": h["run"]}) + "\n"), "refused"),
        ("the journal a directory", lambda c, d, j, l, h, o: (j.unlink(), j.mkdir()), "refused"),
        ("the journal a FIFO", lambda c, d, j, l, h, o: (j.unlink(), os.mkfifo(j)), "refused"),
        ("the results file cut short", lambda c, d, j, l, h, o: (d / "r.json").write_text(
            (d / "r.json").read_text()[:-100]), "refused"),
    ]

    @staticmethod
    def forged_record(lines, header, scenario=None, sample=None):
        """The last journal record, changed, as the next entry (a new sequence number)."""
        last = json.loads(lines[-1])
        record = dict(last["record"])
        if scenario:
            record["scenario"] = scenario
        if sample is not None:
            timing = dict(record["timing"])
            timing["samples_seconds"] = [sample] + timing["samples_seconds"][1:]
            record["timing"] = timing
        return {"seq": last["seq"] + 1, "record": record}

    def lock_trials(self):
        import fcntl
        directory = self.fresh()  # a stale lock file of a process that is gone
        (directory / "r.json.lock").write_text("99999999\n")
        code, text = self.run(directory)
        self.record("stale or foreign lock", code == 0 and not self.finished_once(directory), f"stale: {text[-300:]}")

        directory = self.fresh()  # a live lock held by another process (this one)
        with open(directory / "r.json.lock", "w") as held:
            fcntl.lockf(held, fcntl.LOCK_EX)
            code, text = self.run(directory)
        ok = code == 2 and f"is being written by process {os.getpid()}" in text and not (directory / "r.json").exists()
        self.record("stale or foreign lock", ok, f"held: exit {code}: {text[-300:]}")

        for how in ("lock file removed", "lock file replaced", "directory removed"):
            directory = self.fresh()
            (directory / "d").mkdir()
            (directory / "long.json").write_text(json.dumps(scenario(200, warmup=0.02)))
            output = directory / "d" / "r.json"
            first = subprocess.Popen([self.binary, "run", str(directory / "long.json"), "-o", str(output)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     env=self.environment(extra={"TMPDIR": str(directory)}))
            journal = output.parent / "r.json.journal"
            deadline = time.time() + 10
            while time.time() < deadline and not (journal.exists() and b'"record"' in journal.read_bytes()):
                time.sleep(0.01)
            if how == "directory removed":
                shutil.rmtree(directory / "d")
            else:
                (output.parent / "r.json.lock").unlink()
                if how == "lock file replaced":
                    (output.parent / "r.json.lock").write_text("1\n")
            code, text = self.run(directory, output="d/r.json", extra=["--overwrite"])
            second = self.finished_once(directory / "d", cases=CASES) if code == 0 else f"second exited {code}"
            first_text = first.communicate()[0].decode(errors="replace")
            rescued = list(directory.glob("attnbench-*.json"))
            ok = (first.returncode == 4 and not second and len(rescued) == 1
                  and len(self.load(rescued[0])["records"]) >= 1 and "continue with the same command, -o" in first_text)
            self.record("stale or foreign lock", ok, f"{how}: first exit {first.returncode}, {second}, "
                        f"{len(rescued)} rescued: {first_text[-300:]}")

    def two_writers(self, trials):
        for trial in range(trials):
            directory = self.fresh()
            delay = trial * 0.1 / max(1, trials - 1)
            first = self.start(directory, extra=["--resume"])
            time.sleep(delay)
            second = self.start(directory, extra=["--resume"])
            outputs = [p.communicate()[0].decode(errors="replace") for p in (first, second)]
            codes = [first.returncode, second.returncode]
            refused = [c == 2 and "is being written by process" in t for c, t in zip(codes, outputs)]
            ok_codes = all(c == 0 or r for c, r in zip(codes, refused)) and 0 in codes
            problem = "" if ok_codes else f"exits {codes}: {outputs[0][-200:]} {outputs[1][-200:]}"
            problem = problem or self.finished_once(directory)
            self.record("two writers 0-100 ms apart", not problem, f"{delay * 1000:.0f} ms: {problem}")

    def file_systems(self):
        for limit in (6000, 20000, 60000):  # a file-size limit fails a write as a full disk does
            directory = self.fresh()
            process = subprocess.Popen([self.binary, "run", str(directory / "s.json"), "-o", str(directory / "r.json")],
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       preexec_fn=lambda: __import__("resource").setrlimit(
                                           __import__("resource").RLIMIT_FSIZE, (limit, limit)))
            text = process.communicate()[0].decode(errors="replace")
            problem = self.full_disk_outcome(directory, process.returncode, text)
            self.record("file-size limit", not problem, f"{limit} bytes: {problem}")
        if os.geteuid() != 0:
            self.skip("full file system")
            self.skip("read-only file system")
            return
        for size in ("24k", "40k"):
            directory = self.fresh()
            disk = directory / "disk"
            disk.mkdir()
            if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)]).returncode != 0:
                self.skip("full file system")
                continue
            code, text = self.run(directory, output="disk/r.json")
            for name in ("r.json", "r.json.journal"):
                if (disk / name).exists():
                    shutil.copy(disk / name, directory / name)
            subprocess.run(["umount", str(disk)])
            problem = self.full_disk_outcome(directory, code, text)
            self.record("full file system", not problem, f"{size}: {problem}")

        # Killed mid-run, its file system then read-only: --resume is refused and
        # changes nothing; writable again, it finishes.
        directory = self.fresh()
        disk = directory / "disk"
        disk.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)]).returncode != 0:
            self.skip("read-only file system")
            return
        self.run(directory, output="disk/r.json", signal_at="write:r.json.journal:4:9")
        before = {p.name: p.read_bytes() for p in disk.iterdir()}
        problem = ""
        if subprocess.run(["mount", "-o", "remount,ro", str(disk)]).returncode != 0:
            problem = "could not remount read-only"
        else:
            code, text = self.run(directory, output="disk/r.json", extra=["--resume"])
            if code != 2 or "cannot write into" not in text:
                problem = f"resume on a read-only file system: exit {code}: {text[-300:]}"
            elif {p.name: p.read_bytes() for p in disk.iterdir()} != before:
                problem = "the refused resume changed the files"
            subprocess.run(["mount", "-o", "remount,rw", str(disk)])
        if not problem:
            code, text = self.run(directory, output="disk/r.json", extra=["--resume"])
            problem = f"exit {code}: {text[-300:]}" if code != 0 else self.finished_once(disk)
        subprocess.run(["umount", str(disk)])
        self.record("read-only file system", not problem, problem)

    def full_disk_outcome(self, directory, code, text):
        """'' when a run that met a full disk (or a file-size limit) behaved: it finished, or
        it exited 4 saying where the records are, and --resume elsewhere finishes."""
        if code == 0:
            return self.finished_once(directory)
        if code != 4 or "are safe in" not in text or "internal error" in text:
            return f"exit {code}: {text[-300:]}"
        return self.resume_to_the_end(directory)

    def signal_trials(self, trials):
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            for trial in range(trials):
                directory = self.fresh()
                process = self.start(directory)
                time.sleep(self.random.uniform(0.05, 0.6))
                process.send_signal(sig)
                text = process.communicate()[0].decode(errors="replace")
                code = process.returncode
                if code == 0:
                    problem = self.finished_once(directory)
                elif code == -sig:  # before the run installed its handlers: nothing written yet
                    problem = self.whole_files(directory) or self.resume_to_the_end(directory)
                elif code == 128 + sig:
                    problem = self.whole_files(directory) or ("" if "interrupted" in text else text[-300:])
                    problem = problem or self.resume_to_the_end(directory)
                else:
                    problem = f"exit {code}: {text[-300:]}"
                self.record(f"{signal.Signals(sig).name} at a random moment", not problem, problem)
        for trial in range(3):  # run … 2>&1 | head: the reader leaves after a few lines
            directory = self.fresh()
            process = self.start(directory)
            for _ in range(1 + trial):
                process.stdout.readline()
            process.stdout.close()
            process.wait()
            code = process.returncode
            problem = "" if code in (0, 128 + signal.SIGPIPE) else f"exit {code}"
            problem = problem or self.whole_files(directory) or self.resume_to_the_end(directory)
            self.record("SIGPIPE (the reader went away)", not problem, problem)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # after the run finished
            directory = self.fresh()
            code, text = self.run(directory, signal_at=f"rename:/r.json:2:{int(sig)}")
            problem = "" if code == 128 + sig and "is complete" in text else f"exit {code}: {text[-300:]}"
            problem = problem or self.finished_once(directory)
            self.record("a signal after the run finished", not problem, problem)

    def report(self):
        width = max(len(kind) for kind in self.counts)
        total = [0, 0, 0]
        for kind, (passed, failed, skipped) in self.counts.items():
            print(f"{kind:<{width}}  {passed:3d} passed  {failed:3d} failed" + (f"  {skipped} skipped" if skipped else ""))
            total = [a + b for a, b in zip(total, (passed, failed, skipped))]
        print(f"{'all trials':<{width}}  {total[0]:3d} passed  {total[1]:3d} failed  {total[2]} skipped")
        for failure in self.failures:
            print("FAILED", failure[:1500])
        return total[1] == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True, type=pathlib.Path)
    parser.add_argument("--faults", required=True, type=pathlib.Path, help="the LD_PRELOAD faults library")
    parser.add_argument("--seed", type=int, default=random.randrange(1 << 30))
    parser.add_argument("--quick", action="store_true", help="a third of the random trials")
    parser.add_argument("--keep", action="store_true", help="keep the trials' directories")
    options = parser.parse_args()
    print(f"seed {options.seed}; binary {options.binary}")
    campaign = Campaign(options.binary.resolve(), options.faults.resolve(), options.seed)
    scale = 3 if options.quick else 1
    try:
        campaign.random_kills(30 // scale)
        campaign.pinned_kills()
        campaign.damage_trials()
        campaign.lock_trials()
        campaign.two_writers(11)
        campaign.file_systems()
        campaign.signal_trials(10 // scale)
        ok = campaign.report()
    finally:
        if not options.keep:
            shutil.rmtree(campaign.root, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
