// `troupe bench decode --data FILE.rec`: images/s of the training input pipeline for RecordIO
// JPEGs, the work a loader does per batch: read the record, decode the JPEG, take a random
// resized crop resampled to the output size, mirror, normalize (batch_source::make on a
// streamed dataset, oneTBB across the batch's images).
//
// Each thread count in --threads runs the whole file --epochs times (a fresh epoch each, so
// crops differ) after one warm-up pass that brings the file into the page cache; the median
// epoch is reported. Beside the figure stands the ideal: the one-thread rate times the thread
// count (decoding is independent per image, so anything below it is scheduling, memory
// bandwidth or a shared core). Process CPU time per image stands beside it: on a shared
// machine it moves far less than wall time. scripts/bench_decode_pil.py measures PIL on the
// same files the same way.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <tuple>

#include <tbb/global_control.h>

#include "apps/commands.hpp"
#include "apps/flags.hpp"
#include <troupe/io/batch_source.hpp>
#include <troupe/io/normalization.hpp>
#include <troupe/io/record_dataset.hpp>

namespace troupe {

namespace {

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

struct epoch_time {
  double wall = 0, cpu = 0;
};

// Wall and process CPU seconds for every batch of one epoch of `source`.
epoch_time time_epoch(const batch_source& source, std::int64_t epoch) {
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = cpu_seconds();
  for (std::int64_t b = 0; b < source.batches_per_epoch(); ++b)
    source.make(epoch, b);
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
          cpu_seconds() - cpu_start};
}

} // namespace

int decode_bench_command(const std::vector<std::string>& args) {
  std::string data, index, threads_text = "1,2", shape_text = "3,224,224";
  std::int64_t batch_size = 64, epochs = 3;
  flag_set f("bench decode",
             "Measures decoded + augmented images/s of a RecordIO file (random resized crop, "
             "mirror, ImageNet normalization) per thread count.");
  f.add("data", data, "the .rec file (e.g. from troupe im2rec)");
  f.add("index", index, "its .idx (\"\": walk the file)");
  f.add("threads", threads_text, "thread counts to measure, e.g. 1,2");
  f.add("image-shape", shape_text, "output C,H,W");
  f.add("batch-size", batch_size, "images per batch (one oneTBB loop)");
  f.add("epochs", epochs, "timed passes over the file per thread count (median reported)");
  if (!f.parse(args)) {
    std::cout << f.help();
    return 0;
  }
  if (data.empty())
    throw usage_error("--data is required: a .rec file (troupe im2rec packs one)");
  check_range("batch-size", batch_size, 1, 1 << 16);
  check_range("epochs", epochs, 1, 1000);
  record_dataset_options records;
  records.path = data;
  records.index_path = index;
  records.image_shape = parse_shape("image-shape", shape_text);
  records.classes = 1 << 30; // any label is fine here: this measures images, not classes
  const auto dataset = open_record_dataset(records);
  batch_source_options options;
  options.batch_size = batch_size;
  options.augment.random_resized_crop = true;
  options.augment.mirror = true;
  std::tie(options.augment.mean, options.augment.stdev) = standard_normalization("imagenet");
  const batch_source source(dataset, options);
  const double images = static_cast<double>(dataset->size());
  std::printf("decode: %s, %.0f images -> %s, batch %lld, random resized crop + mirror + "
              "normalize\n",
              data.c_str(), images, shape_text.c_str(), static_cast<long long>(batch_size));
  double one_thread_rate = 0;
  for (double count : parse_number_list("threads", threads_text)) {
    const int threads = static_cast<int>(count);
    check_range("threads", threads, 1, 1024);
    tbb::global_control cap(tbb::global_control::max_allowed_parallelism, std::size_t(threads));
    time_epoch(source, 0); // warm-up: page cache, allocations
    std::vector<double> seconds, cpu;
    for (std::int64_t e = 1; e <= epochs; ++e) {
      const auto t = time_epoch(source, e);
      seconds.push_back(t.wall);
      cpu.push_back(t.cpu);
    }
    std::sort(seconds.begin(), seconds.end());
    std::sort(cpu.begin(), cpu.end());
    const double median = seconds[seconds.size() / 2];
    const double cpu_ms = 1e3 * cpu[cpu.size() / 2] / images;
    const double rate = images / median;
    if (threads == 1)
      one_thread_rate = rate;
    std::printf("RESULT decode threads=%d images_per_s=%.1f cpu_ms_per_image=%.2f  (= %.0f "
                "images / %.3f s median of %lld epochs)",
                threads, rate, cpu_ms, images, median, static_cast<long long>(epochs));
    if (one_thread_rate > 0 && threads > 1)
      std::printf("  ideal %.1f (= %d x %.1f), %.0f%% of it", threads * one_thread_rate, threads,
                  one_thread_rate, 100 * rate / (threads * one_thread_rate));
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}

} // namespace troupe
