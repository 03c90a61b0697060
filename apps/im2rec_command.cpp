// `troupe im2rec PREFIX ROOT`: packs JPEG images into PREFIX.rec + PREFIX.idx, the files
// MXNet's tools/im2rec.py writes and its ImageRecordIter (and `troupe train --data-train`)
// reads. The images come from ROOT's class sub-folders (the list is written to PREFIX.lst,
// as `im2rec.py --list` would) or from a `.lst` given with --lst, paths relative to ROOT.
//
// Each image is read and decoded (a file that does not decode is reported and left out, so a
// packed set never holds an image the reader would refuse), then stored as it was, or, with
// --resize or --quality, re-encoded. Records are built on --num-thread threads a window at a
// time and written in list order, so the output is byte-identical for any thread count.
#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "apps/commands.hpp"
#include "apps/flags.hpp"
#include "apps/run_output.hpp"
#include <troupe/io/dataset.hpp>
#include <troupe/io/image_augment.hpp>
#include <troupe/io/image_list.hpp>
#include <troupe/io/image_record.hpp>
#include <troupe/io/jpeg_codec.hpp>
#include <troupe/io/recordio.hpp>

namespace troupe {

namespace {

struct im2rec_options {
  std::string prefix, root, list;
  int resize = 0, quality = 0, threads = 1;
  bool list_only = false;
};

// One image's framed record, or why it was left out.
struct packed_item {
  std::vector<std::uint8_t> frames;
  std::string failure;
};

std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw io_error("cannot open");
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

packed_item pack_one(const im2rec_options& o, const image_list_entry& entry) {
  packed_item item;
  try {
    const auto file = read_bytes(o.root + "/" + entry.path);
    auto image = decode_jpeg(file.data(), file.size());
    std::vector<std::uint8_t> encoded;
    if (o.resize > 0 || o.quality > 0) {
      if (o.resize > 0)
        image = resize_shorter_side(image, o.resize);
      encoded = encode_jpeg(image, o.quality > 0 ? o.quality : 95);
    }
    const auto& stored = encoded.empty() ? file : encoded;
    const auto payload =
      pack_image_record(entry.labels, entry.index, 0, stored.data(), stored.size());
    recordio::append_record(item.frames, payload.data(), payload.size());
  } catch (const std::exception& e) {
    item.failure = e.what();
  }
  return item;
}

std::int64_t pack(const im2rec_options& o, const std::vector<image_list_entry>& entries) {
  const std::string rec_path = o.prefix + ".rec", idx_path = o.prefix + ".idx";
  std::ofstream rec(rec_path, std::ios::binary | std::ios::trunc);
  std::ofstream idx(idx_path, std::ios::binary | std::ios::trunc);
  if (!rec || !idx)
    throw io_error((rec ? idx_path : rec_path) + ": cannot create");
  tbb::task_arena arena(o.threads);
  const std::size_t window = 64 * static_cast<std::size_t>(o.threads);
  std::vector<packed_item> items;
  std::uint64_t offset = 0;
  std::int64_t packed = 0, skipped = 0;
  for (std::size_t start = 0; start < entries.size(); start += window) {
    const std::size_t end = std::min(entries.size(), start + window);
    items.assign(end - start, {});
    arena.execute([&] {
      tbb::parallel_for(start, end,
                        [&](std::size_t i) { items[i - start] = pack_one(o, entries[i]); });
    });
    for (std::size_t i = start; i < end; ++i) {
      const auto& item = items[i - start];
      if (!item.failure.empty()) {
        std::cerr << "im2rec: skipping " << entries[i].path << " (index " << entries[i].index
                  << "): " << item.failure << '\n';
        ++skipped;
        continue;
      }
      idx << entries[i].index << '\t' << offset << '\n';
      rec.write(reinterpret_cast<const char*>(item.frames.data()),
                static_cast<std::streamsize>(item.frames.size()));
      offset += item.frames.size();
      ++packed;
    }
  }
  rec.flush();
  idx.flush();
  if (!rec || !idx)
    throw io_error(rec_path + ": write failed (disk full?)");
  std::cout << "im2rec: packed " << packed << " images into " << rec_path << " (" << offset
            << " bytes) and " << idx_path << (skipped ? ", skipped " + std::to_string(skipped) : "")
            << '\n';
  return packed;
}

} // namespace

int im2rec_command(const std::vector<std::string>& args) {
  im2rec_options o;
  flag_set f("im2rec PREFIX ROOT",
             "Packs JPEGs into PREFIX.rec and PREFIX.idx (MXNet's RecordIO image format). Without "
             "--lst, ROOT's sub-folders are the classes in sorted name order and the list is "
             "written to PREFIX.lst.");
  f.add("lst", o.list,
        "read this .lst (index, labels, path relative to ROOT) instead of listing ROOT");
  f.add_switch("list-only", o.list_only, "only write PREFIX.lst from ROOT's class sub-folders");
  f.add("resize", o.resize, "resize the shorter side to this many pixels and re-encode (0: keep)");
  f.add("quality", o.quality,
        "JPEG quality when re-encoding, 1..100 (0: store files as they are "
        "unless --resize, which re-encodes at 95)");
  f.add("num-thread", o.threads,
        "threads decoding and encoding (output order does not depend on it)");
  // PREFIX and ROOT come first, flags after them (as `troupe check CONFIG [flags]`).
  const bool positional =
    args.size() >= 2 && args[0].rfind("-", 0) != 0 && args[1].rfind("-", 0) != 0;
  for (const auto& arg : args)
    if (arg == "--help" || arg == "-h") {
      std::cout << f.help();
      return 0;
    }
  if (!positional)
    throw usage_error(
      "expected PREFIX ROOT before any flag, e.g. troupe im2rec data/train images/train");
  f.parse(std::vector<std::string>(args.begin() + 2, args.end()));
  o.prefix = args[0];
  o.root = args[1];
  check_range("resize", o.resize, 0, 65535);
  check_range("quality", o.quality, 0, 100);
  check_range("num-thread", o.threads, 1, 1024);
  if (o.list_only && !o.list.empty())
    throw usage_error("--list-only writes a list; it cannot be combined with --lst");
  // `troupe im2rec data/train images` in a fresh checkout: the folder is made, as for
  // --model-prefix.
  make_parent_folder("PREFIX " + o.prefix, o.prefix);
  const auto started = std::chrono::steady_clock::now();
  std::vector<image_list_entry> entries;
  if (o.list.empty()) {
    entries = list_image_folder(o.root);
    write_image_list(o.prefix + ".lst", entries);
    std::cout << "im2rec: listed " << entries.size() << " images in " << o.prefix << ".lst\n";
    if (o.list_only)
      return 0;
  } else {
    entries = read_image_list(o.list);
  }
  const auto packed = pack(o, entries);
  std::cout << "im2rec: packed " << packed << " of " << entries.size() << " images in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
            << " s\n";
  return packed > 0 ? 0 : 1;
}

} // namespace troupe
