// Class names per dataset (see class_names.hpp). The fixed lists are the datasets' published
// label names; the files are read only when present, because a directory holding just the
// batches, or a .rec without its .lst, is complete data whose classes are numbered.
#include <troupe/io/class_names.hpp>

#include <filesystem>
#include <map>

#include <troupe/io/image_list.hpp>

#include "io/file_bytes.hpp"

namespace troupe {

namespace {

namespace fs = std::filesystem;

const std::vector<std::string> fashion_names{"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                             "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                             "Bag",         "Ankle boot"};
const std::vector<std::string> cifar10_names{"airplane", "automobile", "bird",  "cat",  "deer",
                                             "dog",      "frog",       "horse", "ship", "truck"};

std::vector<std::string> numbers(int classes) {
  std::vector<std::string> out;
  for (int c = 0; c < classes; ++c)
    out.push_back(std::to_string(c));
  return out;
}

// `names` for the first classes, numbers for any beyond.
std::vector<std::string> named(const std::vector<std::string>& names, int classes) {
  auto out = numbers(classes);
  for (std::size_t c = 0; c < out.size() && c < names.size(); ++c)
    out[c] = names[c];
  return out;
}

std::vector<std::string> cifar10_meta(const std::string& dir, int classes) {
  for (const auto& place : {fs::path(dir), fs::path(dir) / "cifar-10-batches-bin"}) {
    const auto path = (place / "batches.meta.txt").string();
    std::error_code error;
    if (!fs::is_regular_file(path, error))
      continue;
    std::vector<std::string> names;
    for_each_text_line(path, "the class names", [&](std::int64_t, const std::string& line) {
      const auto first = line.find_first_not_of(" \t");
      names.push_back(line.substr(first, line.find_last_not_of(" \t") - first + 1));
    });
    if (static_cast<int>(names.size()) < classes)
      throw io_error(path + ": " + std::to_string(names.size()) + " class names, expected "
                     + std::to_string(classes) + " (one a line)");
    return named(names, classes);
  }
  return named(cifar10_names, classes);
}

// The folder of each label in the .lst im2rec wrote beside the .rec; numbers unless every
// label 0 .. classes - 1 there has exactly one folder.
std::vector<std::string> record_folders(const std::string& rec_path, int classes) {
  auto lst = fs::path(rec_path);
  lst.replace_extension(".lst");
  std::error_code error;
  if (!fs::is_regular_file(lst, error))
    return numbers(classes);
  std::map<int, std::string> folders;
  for (const auto& entry : read_image_list(lst.string())) {
    const auto slash = entry.path.find('/');
    const float label = entry.labels.front();
    const int c = static_cast<int>(label);
    if (slash == std::string::npos || slash == 0 || float(c) != label || c < 0 || c >= classes)
      return numbers(classes);
    const auto folder = entry.path.substr(0, slash);
    if (!folders.emplace(c, folder).second && folders[c] != folder)
      return numbers(classes);
  }
  if (static_cast<int>(folders.size()) != classes)
    return numbers(classes);
  std::vector<std::string> out;
  for (const auto& [label, folder] : folders)
    out.push_back(folder);
  return out;
}

} // namespace

std::vector<std::string> class_names(const dataset_options& options, int classes) {
  if (options.name == "fashion-mnist")
    return named(fashion_names, classes);
  if (options.name == "cifar10")
    return cifar10_meta(options.dir, classes);
  if (options.name == "recordio")
    return record_folders(options.dir, classes);
  return numbers(classes); // mnist's digits are its numbers; synthetic classes have no names
}

} // namespace troupe
