#!/usr/bin/env python3
"""End-to-end checks of RecordIO support through the `troupe` binary.

usage: recordio_check.py TROUPE MODE      (run in a scratch directory; ctest's build dir)
  im2rec  pack a generated folder (sizes, grayscale, CMYK, a corrupt JPEG) and verify the
          files against the format with a reader written here from the specification
          (dmlc-core recordio framing, MXNet's IRHeader 'IfQQ', .idx, .lst), so MXNet's reader
          would read them too; same bytes for 1 and 2 threads; --resize and --quality.
  train   ResNet-20 for one epoch on 256 generated 32x32 JPEGs through every actor, from .rec
          files; validation accuracy must be far above chance (4 colour classes: 0.25).
  bad     corrupt records: a run stops naming the file and record; --skip-bad-records trains
          on and reports the count in the epoch's log line.
  badidx  an .idx that does not match its .rec (offsets all 0, 5 of 18 records, another
          .rec's, empty): train exits 1 naming the .idx before training; the right one trains.
Needs PIL (python3-pil); exits 77 (skipped) without it."""
import os
import struct
import subprocess
import sys
import time

try:
    from PIL import Image
except ImportError:  # a python3 ahead of Debian's on PATH (pyenv): retry with the system one
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("recordio_check: PIL (python3-pil) is not installed; skipping")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = 0xCED7230A


def run(args, expect=0):
    result = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != expect:
        sys.exit(f"{' '.join(args)}: exit {result.returncode}, expected {expect}:\n{result.stdout}")
    return result.stdout


def make_folder(path, images, classes, sizes, odd=False, seed=5):
    args = [sys.executable, os.path.join(HERE, "make_jpeg_folder.py"), path, str(images),
            str(classes), sizes, "--seed", str(seed)]
    run(args + (["--odd"] if odd else []))


def read_records(path):
    """The payloads of a .rec and their offsets, per dmlc-core's RecordIOReader."""
    data = open(path, "rb").read()
    records, at = [], 0
    while at < len(data):
        start, parts = at, []
        while True:
            magic, lrecord = struct.unpack_from("<II", data, at)
            assert magic == MAGIC, f"{path}: bad magic at {at}"
            cflag, length = lrecord >> 29, lrecord & ((1 << 29) - 1)
            parts.append(data[at + 8: at + 8 + length])
            at += 8 + (length + 3) // 4 * 4
            if cflag in (0, 3):
                break
        records.append((start, struct.pack("<I", MAGIC).join(parts)))
    return records


def unpack(payload):
    flag, label, rid, rid2 = struct.unpack_from("<IfQQ", payload)
    image = payload[24:]
    labels = [label]
    if flag > 0:
        labels = list(struct.unpack_from(f"<{flag}f", payload, 24))
        image = payload[24 + 4 * flag:]
    return labels, rid, rid2, image


def check_im2rec(troupe):
    make_folder("imgs", 12, 3, "32x32,40x36,64x48", odd=True)
    out = run([troupe, "im2rec", "two", "imgs", "--num-thread", "2"])
    assert "skipping class1/corrupt.jpg" in out and "truncated JPEG" in out, out
    run([troupe, "im2rec", "one", "imgs", "--num-thread", "1"])
    for ext in ("rec", "idx", "lst"):
        assert open(f"one.{ext}", "rb").read() == open(f"two.{ext}", "rb").read(), f"{ext} differs by threads"

    lst = [line.rstrip("\n").split("\t") for line in open("two.lst")]
    assert len(lst) == 15, lst  # 12 + gray + cmyk + corrupt
    classes = sorted(os.listdir("imgs"))
    for index, line in enumerate(lst):
        assert int(line[0]) == index and line[1] == f"{classes.index(line[2].split('/')[0])}.000000", line
    idx = [tuple(int(v) for v in line.split("\t")) for line in open("two.idx")]
    records = read_records("two.rec")
    assert len(records) == len(idx) == 14, (len(records), len(idx))
    by_offset = dict(records)
    listed = {int(line[0]): line for line in lst}
    for key, offset in idx:
        labels, rid, rid2, image_bytes = unpack(by_offset[offset])
        line = listed[key]
        assert rid == key and rid2 == 0 and labels == [float(line[1])], (key, labels, rid)
        assert image_bytes == open(os.path.join("imgs", line[2]), "rb").read(), "not stored as given"
    assert "class1/corrupt.jpg" not in [listed[k][2] for k, _ in idx]

    run([troupe, "im2rec", "small", "imgs", "--lst", "two.lst", "--resize", "16", "--quality", "80"])
    import io
    for _, payload in read_records("small.rec"):
        image = Image.open(io.BytesIO(unpack(payload)[3]))
        assert min(image.size) == 16 and image.mode == "RGB", (image.size, image.mode)

    # A .lst with two labels per image: the header's flag counts them.
    with open("multi.lst", "w") as f:
        f.write("5\t1.000000\t2.500000\tclass0/gray.jpg\n")
    run([troupe, "im2rec", "multi", "imgs", "--lst", "multi.lst"])
    labels, rid, _, _ = unpack(read_records("multi.rec")[0][1])
    assert labels == [1.0, 2.5] and rid == 5, labels
    assert open("multi.idx").read() == "5\t0\n"
    # The decode benchmark runs on them (a smoke test: its figures are docs/benchmarks.md's).
    out = run([troupe, "bench", "decode", "--data", "two.rec", "--threads", "1,2", "--epochs", "1",
               "--image-shape", "3,32,32", "--batch-size", "4"])
    assert "RESULT decode threads=2 images_per_s=" in out, out
    run([troupe, "im2rec", "x", "/nonexistent/images"], expect=1)
    run([troupe, "im2rec", "x"], expect=2)


def train_flags(troupe, train, val):
    return [troupe, "train", "--data-train", train, "--data-val", val, "--network", "resnet",
            "--num-layers", "20", "--image-shape", "3,32,32", "--num-classes", "4",
            "--num-epochs", "1", "--batch-size", "32", "--warmup-epochs", "0",
            "--lr-schedule", "constant", "--lr", "0.01", "--mom", "0.5", "--progress", "off"]


def check_train(troupe):
    make_folder("train", 256, 4, "32x32,36x32", seed=1)
    make_folder("val", 64, 4, "32x32", seed=2)
    run([troupe, "im2rec", "train", "train"])
    run([troupe, "im2rec", "val", "val"])
    started = time.time()
    out = run(train_flags(troupe, "train.rec", "val.rec") + ["--metrics", "rec.jsonl"])
    print(out)
    print(f"training took {time.time() - started:.1f} s")
    assert "recordio train.rec (256 records)" in out, out
    run([sys.executable, os.path.join(HERE, "metrics_min.py"), "rec.jsonl", "1", "0.5"])


def check_bad(troupe):
    make_folder("bad", 64, 4, "32x32", seed=3)
    run([troupe, "im2rec", "bad", "bad"])
    records = read_records("bad.rec")
    data = bytearray(open("bad.rec", "rb").read())
    # Record 3: its JPEG's bytes after the header garbled. Record 9: its magic broken.
    jpeg_start = records[3][0] + 8 + 24
    data[jpeg_start + 2: jpeg_start + 200] = b"\x5a" * 198
    data[records[9][0]] ^= 0xFF
    open("bad.rec", "wb").write(bytes(data))
    os.remove("bad.idx")  # walk the file: the broken magic is found when opening
    flags = train_flags(troupe, "bad.rec", "val.rec" if os.path.exists("val.rec") else "bad.rec")
    out = run(flags, expect=1)
    assert "bad.rec: record 9 at offset" in out and "bad magic" in out, out
    out = run(flags + ["--skip-bad-records"])
    assert "Epoch[0] Train-skipped-records=2" in out, out
    # With the index the broken magic is met while reading, and the JPEG stops a run too.
    open("bad.idx", "w").write("".join(f"{i}\t{offset}\n" for i, (offset, _) in enumerate(records)))
    out = run(flags, expect=1)
    assert "bad.rec: record 3: image" in out or "bad.rec: record 9 at offset" in out, out


def check_bad_index(troupe):
    make_folder("idx", 18, 3, "32x32,36x32", seed=4)
    make_folder("other", 12, 3, "24x24", seed=6)  # smaller: every offset inside idx.rec
    run([troupe, "im2rec", "idx", "idx"])
    run([troupe, "im2rec", "other", "other"])
    good = open("idx.idx").read()
    lines = good.splitlines(keepends=True)
    assert len(lines) == len(read_records("idx.rec")) == 18, good
    flags = [troupe, "train", "--data-train", "idx.rec", "--data-val", "idx.rec",
             "--network", "resnet", "--num-layers", "20", "--image-shape", "3,32,32",
             "--num-classes", "3", "--num-epochs", "1", "--batch-size", "6",
             "--warmup-epochs", "0", "--lr-schedule", "constant", "--lr", "0.01",
             "--progress", "off"]
    cases = {
        "zeros.idx": "".join(f"{i}\t0\n" for i in range(18)),
        "five.idx": "".join(lines[:5]),
        "other.idx": open("other.idx").read(),
        "empty.idx": "",
    }
    expected = {"zeros.idx": "does not come after", "five.idx": "lists 5 records",
                "other.idx": "not the start of a record", "empty.idx": "is empty but"}
    for name, text in cases.items():
        open(name, "w").write(text)
        out = run(flags + ["--data-train-idx", name], expect=1)
        assert name in out and expected[name] in out, (name, out)
        assert "Epoch[0]" not in out, (name, out)  # refused before training
    out = run(flags + ["--data-train-idx", "idx.idx"])
    assert "recordio idx.rec (18 records)" in out, out


def main():
    troupe, mode = sys.argv[1], sys.argv[2]
    {"im2rec": check_im2rec, "train": check_train, "bad": check_bad,
     "badidx": check_bad_index}[mode](troupe)
    print(f"recordio_check {mode}: ok")


if __name__ == "__main__":
    main()
