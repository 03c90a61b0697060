// Reader for the CIFAR-10 binary batches (format in cifar10_reader.hpp).
//
// The record layout already is label + CHW planes, so pixels are copied straight across; the
// work here is checking that every file is whole (a size that is a multiple of the record) and
// that every label is a CIFAR-10 class, and naming the file and record when one is not.
#include <troupe/io/cifar10_reader.hpp>

#include <filesystem>
#include <utility>

#include "io/file_bytes.hpp"

namespace troupe {

namespace {

constexpr std::size_t image_bytes = 3 * 32 * 32;
constexpr std::size_t record_bytes = 1 + image_bytes;
constexpr int cifar10_classes = 10;

std::vector<std::string> batch_file_names(split which) {
  if (which == split::test)
    return {"test_batch.bin"};
  return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
          "data_batch_5.bin"};
}

// Appends one batch file's records after checking its size and labels.
void append_batch_file(const std::string& path, std::vector<std::uint8_t>& pixels,
                       std::vector<std::int32_t>& labels, std::size_t files_left) {
  const auto bytes = read_file_bytes(path);
  if (bytes.empty())
    throw io_error(path + ": empty file, expected 3073-byte CIFAR-10 records");
  if (bytes.size() % record_bytes != 0)
    throw io_error(path + ": size " + std::to_string(bytes.size())
                   + " bytes is not a multiple of the 3073-byte CIFAR-10 record ("
                   + std::to_string(bytes.size() / record_bytes) + " records and "
                   + std::to_string(bytes.size() % record_bytes) + " bytes over)");
  const std::size_t records = bytes.size() / record_bytes;
  // Files of one release hold equally many records, so this reserves once for all of them.
  pixels.reserve(pixels.size() + files_left * records * image_bytes);
  labels.reserve(labels.size() + files_left * records);
  for (std::size_t r = 0; r < records; ++r) {
    const std::uint8_t* record = bytes.data() + r * record_bytes;
    if (record[0] >= cifar10_classes)
      throw io_error(path + ": label " + std::to_string(record[0]) + " in record "
                     + std::to_string(r) + " is out of range [0, 10)");
    labels.push_back(record[0]);
    pixels.insert(pixels.end(), record + 1, record + record_bytes);
  }
}

} // namespace

std::shared_ptr<const dataset> load_cifar10_files(const std::vector<std::string>& paths,
                                                  const std::string& description) {
  if (paths.empty())
    throw io_error(description + ": no CIFAR-10 batch files given");
  std::vector<std::uint8_t> pixels;
  std::vector<std::int32_t> labels;
  for (std::size_t i = 0; i < paths.size(); ++i)
    append_batch_file(paths[i], pixels, labels, paths.size() - i);
  return std::make_shared<const dataset>(description, shape_t{3, 32, 32}, cifar10_classes,
                                         std::move(pixels), std::move(labels));
}

std::shared_ptr<const dataset> load_cifar10_dir(const std::string& dir, split which) {
  namespace fs = std::filesystem;
  const auto names = batch_file_names(which);
  const std::string places[2] = {dir, (fs::path(dir) / "cifar-10-batches-bin").string()};
  const std::string split_name = which == split::train ? "train" : "test";

  // Use the place holding the most of the files, so the error lists the fewest missing.
  std::vector<std::string> best_found, best_missing;
  for (const auto& place : places) {
    std::vector<std::string> found, missing;
    for (const auto& name : names) {
      const auto path = (fs::path(place) / name).string();
      std::error_code error;
      (fs::exists(path, error) ? found : missing).push_back(path);
    }
    if (missing.empty())
      return load_cifar10_files(found, "cifar10 " + split_name + " (" + place + ")");
    const bool first_place = best_found.empty() && best_missing.empty();
    if (first_place || found.size() > best_found.size()) {
      best_found = std::move(found);
      best_missing = std::move(missing);
    }
  }
  std::string list;
  for (const auto& path : best_missing)
    list += (list.empty() ? "" : ", ") + path;
  throw io_error(dir + ": cifar10 " + split_name + " files not found: " + list + " (looked in "
                 + places[0] + " and " + places[1] + ")");
}

} // namespace troupe
