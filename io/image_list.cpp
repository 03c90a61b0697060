// Listing and `.lst` files for im2rec (format in image_list.hpp). Sorting is by the names'
// bytes, as Python's sorted() on str sorts ASCII names, so the class numbers agree with
// MXNet's tool on the same folder.
#include <troupe/io/image_list.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <troupe/io/dataset.hpp>

#include "io/file_bytes.hpp"

namespace troupe {

namespace {

namespace fs = std::filesystem;

bool is_jpeg_name(const fs::path& file) {
  std::string extension = file.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return extension == ".jpg" || extension == ".jpeg";
}

std::vector<std::string> sorted_names(const fs::path& dir, bool directories) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const bool match =
      directories ? entry.is_directory() : entry.is_regular_file() && is_jpeg_name(entry.path());
    if (match)
      names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string fail_line(const std::string& path, std::int64_t number, const std::string& line,
                      const std::string& what) {
  return path + ": line " + std::to_string(number) + ": " + what + " in '" + line + "'";
}

} // namespace

std::vector<image_list_entry> list_image_folder(const std::string& root) {
  std::error_code error;
  if (!fs::is_directory(root, error))
    throw io_error(root + ": not a directory of class sub-folders");
  std::vector<image_list_entry> entries;
  try {
    const auto classes = sorted_names(root, true);
    if (classes.empty())
      throw io_error(root + ": no class sub-folders (each class is one folder of JPEGs)");
    for (std::size_t label = 0; label < classes.size(); ++label)
      for (const auto& file : sorted_names(fs::path(root) / classes[label], false))
        entries.push_back(
          {entries.size(), {static_cast<float>(label)}, classes[label] + "/" + file});
  } catch (const fs::filesystem_error& e) {
    throw io_error(root + ": cannot list: " + e.what());
  }
  if (entries.empty())
    throw io_error(root + ": its class sub-folders hold no .jpg or .jpeg file");
  return entries;
}

std::vector<image_list_entry> read_image_list(const std::string& path) {
  std::vector<image_list_entry> entries;
  for_each_text_line(path, "the image list", [&](std::int64_t number, const std::string& line) {
    std::vector<std::string> fields;
    std::stringstream split(line);
    for (std::string field; std::getline(split, field, '\t');)
      fields.push_back(field);
    if (fields.size() < 3 || fields.back().empty())
      throw io_error(fail_line(path, number, line, "expected index<TAB>label(s)<TAB>path"));
    image_list_entry entry;
    entry.path = fields.back();
    try {
      std::size_t used = 0;
      entry.index = std::stoull(fields[0], &used);
      if (used != fields[0].size() || fields[0][0] == '-')
        throw std::invalid_argument("index");
    } catch (const std::exception&) {
      throw io_error(
        fail_line(path, number, line, "index '" + fields[0] + "' is not a non-negative integer"));
    }
    for (std::size_t i = 1; i + 1 < fields.size(); ++i) {
      try {
        std::size_t used = 0;
        entry.labels.push_back(std::stof(fields[i], &used));
        if (used != fields[i].size())
          throw std::invalid_argument("label");
      } catch (const std::exception&) {
        throw io_error(fail_line(path, number, line, "label '" + fields[i] + "' is not a number"));
      }
    }
    entries.push_back(std::move(entry));
  });
  return entries;
}

void write_image_list(const std::string& path, const std::vector<image_list_entry>& entries) {
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw io_error(path
                   + ": cannot write the image list: " + std::strerror(errno ? errno : EACCES));
  for (const auto& entry : entries) {
    out << entry.index << '\t';
    for (float label : entry.labels) {
      char text[64];
      std::snprintf(text, sizeof text, "%f\t", static_cast<double>(label));
      out << text;
    }
    out << entry.path << '\n';
  }
  errno = 0;
  out.flush();
  if (!out)
    throw io_error(path + ": cannot write the image list: " + std::strerror(errno ? errno : EIO));
}

} // namespace troupe
