#!/usr/bin/env python3
"""A first hour without surprises: one case per defect a new user met in
config and command-line handling, each run against the real binary and checking the property
itself (exit status, what the run resolved, what the message says). Runs are tiny synthetic jobs.

usage: first_hour.py TROUPE_BINARY CASE       (cases: the functions named case_*)
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

troupe = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
work = tempfile.mkdtemp(prefix="troupe_first_hour_")
# 384 synthetic examples of 8x8: 12 batches of 32 per epoch.
data = "data train = synthetic(shape = [1, 8, 8], classes = 10, examples = 384, batch = 32)\n"
tiny = ["--network", "mlp", "--dataset", "synthetic", "--image-shape", "1,8,8",
        "--num-examples", "384", "--batch-size", "32", "--progress", "off"]
# What troupe eval reads of tiny: the model and the data, not the training batch or the bar.
scored = tiny[:8]


def run(*args, env=None, stdin=None):
    return subprocess.run([troupe, *args], capture_output=True, text=True, cwd=work,
                          env=env if env is not None else os.environ, stdin=stdin)


def expect(done, status, pattern, stream="stderr"):
    text = getattr(done, stream)
    assert done.returncode == status, f"exit {done.returncode}, wanted {status}:\n{done.stdout}{done.stderr}"
    assert re.search(pattern, text, re.M), f"/{pattern}/ not in {stream}:\n{text}"


def write(name, text):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def config(name, schedule, epochs=10):
    return write(name, data + "model mlp\n" + schedule + "\n"
                 + f"train {{ epochs = {epochs}  display = 0 }}\n")


def resolved_steps(done):
    """The multi-step boundaries a run resolved (its `Resolved:` line), as floats."""
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"^Resolved:.* lr_step_epochs=(\S+)", done.stdout, re.M)
    assert found, done.stdout
    return [float(s) for s in found.group(1).split(",")]


def case_steps_follow_num_epochs():
    # Steps written as shares of the run follow --num-epochs, in the config and in the flag.
    shares = config("shares.troupe", "schedule multi_step(steps = [50%, 75%])")
    assert resolved_steps(run("train", "--config", shares, "--num-epochs", "4")) == [2, 3]
    assert resolved_steps(run("train", "--config", shares, "--num-epochs", "2")) == [1, 1.5]
    assert resolved_steps(run("train", *tiny, "--num-epochs", "4", "--lr-step-epochs", "25%,50%")) == [1, 2]
    # The shipped examples write shares: the README's `--num-epochs 3` override is accepted.
    for example in ("fashion_bsp", "cifar10_resnet20_bsp", "cifar10_vgg16"):
        text = open(os.path.join(here, "..", "..", "examples", example + ".troupe")).read()
        assert re.search(r"steps = \[\d+%, \d+%\]", text), example


def case_empty_lr_step_epochs():
    # --lr-step-epochs "" is the default 50% and 75% of the run, even over a config's steps.
    absolute = config("absolute.troupe", "schedule multi_step(steps = [5, 7.5])")
    done = run("train", "--config", absolute, "--num-epochs", "3", "--lr-step-epochs", "")
    assert resolved_steps(done) == [1.5, 2.25]


def case_shortened_under_absolute_step():
    # A run shortened under a step written as an epoch is refused at the step, naming the flag.
    absolute = config("absolute.troupe", "schedule multi_step(steps = [5, 7.5])")
    done = run("train", "--config", absolute, "--num-epochs", "3")
    expect(done, 2, r"absolute\.troupe:3:\d+: step 5 is not inside the run's 3 epochs \(--num-epochs 3\)")
    assert "--lr-step-epochs" in done.stderr and "50%" in done.stderr, done.stderr
    # Written in the config itself, the same step is refused there (troupe check).
    long_steps = config("long_steps.troupe", "schedule multi_step(steps = [5, 12])")
    expect(run("check", long_steps), 2, r"long_steps\.troupe:3:\d+: step 12 is not inside the run's 10 epochs")
    # A share outside (0%, 100%) is refused where it is written.
    bad_share = config("bad_share.troupe", "schedule multi_step(steps = [50%, 100%])")
    expect(run("check", bad_share), 2, r"bad_share\.troupe:3:\d+: .*above 0% and below 100%, got 100%")
    expect(run("train", *tiny, "--lr-step-epochs", "50%,120%"), 2, r"--lr-step-epochs: 120% is not a share")


def case_one_range_per_key():
    # train { threads = N } and --threads N: the same limit (4 per hardware thread, at least 64).
    limit = min(4096, max(64, 4 * os.cpu_count()))
    over = write("threads.troupe", f"train {{ threads = {limit + 1} }}\n")
    expect(run("check", over), 2, rf"threads\.troupe:1:\d+: threads must be between 1 and {limit}")
    expect(run("train", *tiny, "--threads", str(limit + 1)), 2, rf"--threads must be between 1 and {limit}")
    # eval_every = 0 and --eval-every 0 both mean: no validation.
    done = run("train", *tiny, "--num-epochs", "1", "--eval-every", "0")
    assert done.returncode == 0, done.stderr
    assert "Validation-accuracy" not in done.stdout and "Train-accuracy" in done.stdout, done.stdout
    no_val = write("no_val.troupe", data + "model mlp\ntrain { epochs = 1  eval_every = 0 }\n")
    done = run("train", "--config", no_val, "--progress", "off")
    assert done.returncode == 0 and "Validation-accuracy" not in done.stdout, done.stdout + done.stderr
    # Ranges that were wider on one side: --num-epochs, --prefetch, --mom, --warmup-epochs.
    for flag, value, key_text in (("--num-epochs", "1000000001", "train { epochs = 1000000001 }"),
                                  ("--prefetch", "1025", "train { prefetch = 1025 }"),
                                  ("--mom", "0.9999995", "optimizer sgd(momentum = 0.9999995)"),
                                  ("--warmup-epochs", "2000000", "schedule multi_step(warmup = 2000000)")):
        flag_done = run("train", *tiny, flag, value)
        config_done = run("check", write("range.troupe", key_text + "\n"))
        assert flag_done.returncode == config_done.returncode, (flag, flag_done.stderr, config_done.stderr)


def epoch_line_appears(epochs):
    """Starts a run of `epochs` epochs, waits for its first epoch's validation line, stops it."""
    child = subprocess.Popen([troupe, "train", *tiny, "--num-epochs", str(epochs), "--disp-batches", "0"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=work)
    try:
        for line in child.stdout:
            if line.startswith("Epoch[0] Validation-accuracy="):
                return
        raise AssertionError(f"--num-epochs {epochs}: no epoch finished: {child.stderr.read()}")
    finally:
        child.kill()
        child.wait()


def launched_epoch_line_appears(epochs):
    """The same across processes: the scheduler's own run limit wrapped around too."""
    child = subprocess.Popen([troupe, "launch", "-n", "1", "-s", "1", *tiny, "--num-epochs", str(epochs),
                              "--disp-batches", "0"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=work,
                             start_new_session=True)
    seen = []
    try:
        for line in child.stdout:
            seen.append(line)
            if "Epoch[0] Validation-accuracy=" in line:
                return
        raise AssertionError(f"launch --num-epochs {epochs}: no epoch finished: {''.join(seen[-20:])}")
    finally:
        child.send_signal(signal.SIGINT)  # launch passes it on to every node and waits for them
        try:
            child.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


def case_many_epochs():
    # 48 h per phase times the phases of 40000 epochs once wrapped around to a negative limit.
    for epochs in (40000, 36000, 50000, 100000000, 1000000000):
        epoch_line_appears(epochs)
    for epochs in (40000, 1000000000):
        launched_epoch_line_appears(epochs)


def no_secret():
    return {k: v for k, v in os.environ.items() if k != "TROUPE_SECRET"}


def case_node_prefix():
    env = no_secret()
    done = run("node", "--role", "worker", "--scheduler", "127.0.0.1:1", env=env)
    expect(done, 2, r"^troupe node: the cluster secret is missing")
    assert "troupe node: troupe node" not in done.stderr, done.stderr
    done = run("node", "--role", "worker", "--scheduler", "127.0.0.1:1", "--port", "70000", env=env)
    expect(done, 2, r"^troupe node: --port must be between 0 and 65535, got 70000$")


def case_numbers_in_messages():
    env = no_secret()
    # Whole numbers out of range are out of range, printed in full; reals in their shortest form.
    expect(run("check", write("huge.troupe", "train { epochs = 1e30 }\n")), 2,
           r"epochs must be between 1 and 1000000000, got 1e\+30")
    expect(run("check", write("big.troupe", "train { epochs = 10000000000 }\n")), 2,
           r"epochs must be between 1 and 1000000000, got 10000000000$")
    done = run("node", "--role", "worker", "--scheduler", "127.0.0.1:1", "--heartbeat", "0.01",
               env=dict(env, TROUPE_SECRET="a-test-secret-of-32-characters!!"))
    expect(done, 2, r"--heartbeat must be between 0\.05 and 600 seconds, got 0\.01$")


def case_bare_usage():
    # Bare troupe names every command.
    bare = run()
    for command in ("train", "eval", "node", "bench", "devices", "check", "graph", "launch", "im2rec"):
        assert re.search(rf"\b{command}\b", bare.stderr), (command, bare.stderr)


def case_os_reasons():
    # The system's reason when a file cannot be opened or written.
    expect(run("launch", "-n", "2", "-s", "1", "-H", "/nonexistent/hosts", "--scheduler-address", "10.0.0.1",
               "--config", "c.troupe"), 2, r"cannot open hosts file /nonexistent/hosts: No such file or directory")
    images = os.path.join(work, "images", "class0")
    os.makedirs(images, exist_ok=True)
    open(os.path.join(images, "a.jpg"), "wb").close()
    # (/proc takes no new files, even from root; a missing folder would be made, as for
    # --model-prefix.)
    expect(run("im2rec", "/proc/out", os.path.join(work, "images"), "--list-only"), 1,
           r"/proc/out.lst: cannot write the image list: \S")


def case_planning_is_usage():
    # Usage errors found by planning exit 2: a depth the network does not take, an uneven split.
    expect(run("train", "--network", "mlp", "--num-layers", "7"), 2, r"layers|depth")
    bsp = os.path.join(here, "..", "..", "examples", "fashion_bsp.troupe")
    expect(run("train", "--config", bsp, "--server-nodes", "1", "--worker-nodes", "3"), 2,
           r"4 workers \(compute actors\) do not divide evenly over 3 worker processes")


def case_straggler_gone():
    # --straggler was a test knob in the production wiring; tests now make a straggler with a
    # gradient tap, and the flag is unknown like any other misspelling.
    done = run("train", "--help")
    assert done.returncode == 0 and "--straggler" not in done.stdout, done.stdout
    expect(run("train", "--straggler", "1:5"), 2,
           r"^troupe train: unknown flag --straggler(\b| \(did you mean).*; see troupe train --help$")


def case_prefix_folder():
    # The README's `--model-prefix runs/mlp` in a fresh checkout: the folder is made first.
    done = run("train", *tiny, "--num-epochs", "1", "--model-prefix", "runs/deeper/m")
    assert done.returncode == 0, done.stderr
    assert os.path.exists(os.path.join(work, "runs", "deeper", "m-0001.safetensors")), os.listdir(work)
    open(os.path.join(work, "file"), "w").close()
    expect(run("train", *tiny, "--num-epochs", "1", "--model-prefix", "file/m"), 1,
           r"^troupe train: error: --model-prefix file/m: cannot create the folder file: ")


def case_eval_and_im2rec_output():
    # eval prints the loss as train does (a colon: parse_log.py averages `=` values as accuracy).
    done = run("train", *tiny, "--num-epochs", "1", "--model-prefix", "m")
    assert done.returncode == 0, done.stderr
    done = run("eval", *scored, "--model-prefix", "m", "--load-epoch", "1")
    expect(done, 0, r"^Validation-cross-entropy: [\d.]+$", "stdout")
    assert "cross-entropy=" not in done.stdout, done.stdout
    # im2rec says what its time is.
    try:
        import PIL  # noqa: F401
    except ImportError:
        print("skipped the im2rec half: no PIL")
        return
    folder = os.path.join(work, "jpegs")
    subprocess.run([sys.executable, os.path.join(here, "make_jpeg_folder.py"), folder, "6", "2", "16x16"],
                   check=True)
    done = run("im2rec", os.path.join(work, "packed"), folder)
    expect(done, 0, r"^im2rec: packed 6 of 6 images in [\d.e-]+ s$", "stdout")


def case_check_reads_a_bounded_prefix():
    # A device or a data file given as a config is refused after a bounded read, by what it is.
    done = run("check", "/dev/zero")
    expect(done, 2, r"/dev/zero: not a text file \(a NUL byte at offset 0\)")
    big = write("big.troupe", "# " + "x" * (1 << 20) + "\nmodel mlp\n")
    expect(run("check", big), 2, r"big\.troupe: not a config file: longer than 1 MiB")


def case_config_text_encoding():
    # A UTF-8 byte-order mark is skipped; a name that is not ASCII is refused as such.
    bom = write("bom.troupe", "\ufeffmodel mlp\ntrain { epochs = 1 }\n")
    done = run("check", bom)
    assert done.returncode == 0, done.stdout + done.stderr
    umlaut = write("umlaut.troupe", "cluster { w\u00f6rkers = 2 }\n")
    expect(run("check", umlaut), 2, r"umlaut\.troupe:1:12: a non-ASCII character: names and keys are ASCII")


def case_route_errors_say_what_the_language_has():
    # `need` is a number: arithmetic is refused by name; compute's keys are those dsl.md explains.
    arithmetic = write("need.troupe", "topology mine {\n  loader -> compute\n"
                       "  compute -> aggregate(all, need = workers - 1)\n  aggregate -> shard\n"
                       "  shard -> compute(all)\n}\n")
    expect(run("check", arithmetic), 2, r"need\.troupe:3:43: a value is a number, a string, a name or a call: "
           r"arithmetic \(such as 'workers - 1'\) is not part of the language")
    unknown = write("key.troupe", "topology mine {\n  loader -> compute\n  compute -> aggregate(all)\n"
                    "  aggregate -> shard\n  shard -> compute(all, every = 2)\n}\n")
    expect(run("check", unknown), 2, r"unknown key 'every' in compute \(keys: fan or staleness\)$")
    dsl = open(os.path.join(here, "..", "..", "docs", "dsl.md")).read()
    assert "`fan`" in dsl, "dsl.md does not explain compute's key fan"


def case_help_fits_and_names_everything():
    # Bare troupe: a usage within 100 columns; `help --help` is help; bench names its benchmarks;
    # a flag's help states one default.
    bare = run()
    assert bare.returncode == 2 and bare.stderr, bare.stderr
    assert max(len(line) for line in bare.stderr.splitlines()) <= 100, bare.stderr
    expect(run("help", "--help"), 0, r"^commands:$", "stdout")
    bench = run("bench", "--help")
    for name in ("transport", "decode", "scaling"):
        assert f"bench {name}" in bench.stdout, bench.stdout
    train = run("train", "--help").stdout
    loss = train[train.index("--on-worker-loss"):]
    loss = loss[:loss.index("\n  -", 1) if "\n  -" in loss[1:] else len(loss)]
    assert loss.count("default") == 1, loss
    assert "per step of each compute" in train, "--batch-size does not say it is per compute"


def case_flags_are_read_or_refused():
    # A shape on a dataset read from files is refused, not left unread (--num-examples and
    # --num-classes mean a subset and the model's outputs there: docs/data.md, "Subsets").
    done = run("train", "--dataset", "fashion-mnist", "--image-shape", "1,8,8", "--num-epochs", "1")
    expect(done, 2, r"--image-shape describes generated data \(--dataset synthetic\) or RecordIO: "
           r"fashion-mnist takes its shape from its files")
    # A batch larger than the data says what a batch then holds.
    done = run("train", *tiny, "--num-epochs", "1", "--batch-size", "1000000")
    expect(done, 0, r"1 compute\(s\) x 1 batch of 384 \(a batch of 1000000 is more than a compute's part",
           "stdout")


def case_eval_takes_the_checkpoints_network():
    # The checkpoint records its network: eval builds that one unless told another.
    done = run("train", *tiny, "--num-epochs", "1", "--model-prefix", "m")
    assert done.returncode == 0, done.stderr
    assert tiny[:2] == ["--network", "mlp"]
    done = run("eval", *scored[2:], "--model-prefix", "m", "--load-epoch", "1")
    expect(done, 0, r"^Evaluated .*m-0001\.safetensors \(mlp\)", "stdout")


def case_eval_reads_only_its_flags():
    # eval lists what it reads and refuses a training flag it would ignore, naming it.
    help_text = run("eval", "--help").stdout
    for flag in ("--model-prefix", "--load-epoch", "--network", "--val-batch-size", "--per-class"):
        assert flag + " " in help_text or flag + "\n" in help_text, f"eval --help lacks {flag}"
    old_backups = "--replicas"  # the old name of --shard-backups, refused too
    for flag in ("--lr", "--shard-backups", old_backups, "--batch-size", "--num-epochs", "--workers"):
        assert flag + " " not in help_text, f"eval --help lists the training flag {flag}"
    for flag, value in (("--lr", "5"), ("--shard-backups", "1"), (old_backups, "2"), ("--batch-size", "64")):
        done = run("eval", *scored, "--model-prefix", "m", "--load-epoch", "1", flag, value)
        expect(done, 2, "^troupe eval: " + flag + r" is not read by troupe eval \(troupe eval --help "
               r"lists what it reads\)$")


def case_im2rec_makes_its_folder():
    # The README's `troupe im2rec data/train images` in a fresh folder: data/ is made.
    try:
        import PIL  # noqa: F401
    except ImportError:
        print("skipped: no PIL")
        return
    folder = os.path.join(work, "images")
    subprocess.run([sys.executable, os.path.join(here, "make_jpeg_folder.py"), folder, "4", "2", "16x16"],
                   check=True)
    done = run("im2rec", "data/train", "images")
    expect(done, 0, r"^im2rec: packed 4 of 4 images", "stdout")
    assert os.path.exists(os.path.join(work, "data", "train.rec")), os.listdir(work)
    open(os.path.join(work, "plain"), "w").close()
    expect(run("im2rec", "plain/train", "images"), 1, r"PREFIX plain/train: cannot create the folder plain")


def case_examples_leave_threads_to_the_host():
    # A thread count in a shipped example would turn off launch's split of the host's cores.
    folder = os.path.join(here, "..", "..", "examples")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".troupe"):
            text = open(os.path.join(folder, name)).read()
            assert not re.search(r"\bthreads\s*=", text), name


def case_one_process_says_what_it_saved():
    # A one-process run with --model-prefix says what it saved, as a cluster run's scheduler does.
    done = run("train", *tiny, "--num-epochs", "2", "--model-prefix", "runs/m")
    assert done.returncode == 0, done.stderr
    saved = re.findall(r"^checkpoint: saved (\S+)$", done.stderr, re.M)
    assert saved == ["runs/m-0001.safetensors", "runs/m-0002.safetensors"], done.stderr


def case_errors_have_a_place():
    # A refusal that follows from a key points at it; one that follows from a flag names the flag.
    shards = write("shards.troupe", "cluster { servers = 1 shards = 3 server_nodes = 2 worker_nodes = 1 }\n"
                   "model mlp\n")
    expect(run("check", shards), 2, r"shards\.troupe:1:32: plan: 3 parameter shards do not divide evenly")
    backup = os.path.join(here, "..", "..", "examples", "fashion_hierarchical_backup.troupe")
    expect(run("train", "--config", backup, "--workers", "1"), 2,
           r"computes on a machine \(--workers 1\): the barrier could never fill")
    bsp = os.path.join(here, "..", "..", "examples", "fashion_bsp.troupe")
    for command in ("train", "launch"):
        done = run(command, *(["-n", "2"] if command == "launch" else []), "--config", bsp,
                   "--compression", "2bit", "--on-worker-loss", "adopt")
        assert done.returncode != 0, done.stdout + done.stderr
        assert "--on-worker-loss adopt recomputes a lost worker's step" in done.stderr, done.stderr


def case_resolved_values_are_what_runs():
    # check shows what the plan uses and every cluster key; Resolved: names the compression.
    raised = write("raised.troupe", "cluster { servers = 2  shards = 1 }\nmodel mlp\n")
    done = run("check", raised)
    assert done.returncode == 0, done.stderr
    assert re.search(r"^  cluster\.shards = 2  # line 1 says 1, raised to one per server$", done.stdout, re.M), done.stdout
    for key in ("on_worker_loss", "heartbeat", "peer_timeout", "request_timeout", "listen", "link_mbit"):
        assert re.search(rf"^  cluster\.{key} = ", done.stdout, re.M), (key, done.stdout)
    assert re.search(r"^  train\.devices = ", done.stdout, re.M), done.stdout
    done = run("train", *tiny, "--num-epochs", "1", "--compression", "fp16", "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^Resolved:.* compression=fp16 ", done.stdout, re.M), done.stdout


if __name__ == "__main__":
    try:
        globals()["case_" + sys.argv[2]]()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("ok: " + sys.argv[2])
