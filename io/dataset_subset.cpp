// Implementation notes: the subset copies the kept examples' bytes into a dataset of its own,
// so every consumer (batch_source, the loaders, eval) indexes it as any other in-memory set and
// the dataset constructor checks its labels against the class count once.
#include <troupe/io/dataset_subset.hpp>

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <utility>

namespace troupe {

namespace {

int class_number(const std::string& text, const std::string& whole) {
  int value = -1;
  const auto* end = text.data() + text.size();
  const auto [at, problem] = std::from_chars(text.data(), end, value);
  if (text.empty() || problem != std::errc{} || at != end || value < 0)
    throw std::invalid_argument("classes \"" + whole + "\": \"" + text
                                + "\" is not a class index (a whole number from 0)");
  return value;
}

std::string subset_words(const subset_options& o) {
  std::string words;
  if (!o.classes.empty())
    words += "classes " + class_list_text(o.classes);
  if (o.first > 0)
    words += (words.empty() ? "" : ", ") + std::string("first ") + std::to_string(o.first);
  return words;
}

void check_classes(const dataset& full, const subset_options& o) {
  for (const int c : o.classes)
    if (c >= full.classes())
      throw io_error(full.description() + ": class " + std::to_string(c) + " is outside [0, "
                     + std::to_string(full.classes()) + "), the classes its files hold");
  const int largest = o.classes.empty() ? full.classes() - 1 : o.classes.back();
  if (o.class_count > 0 && o.class_count <= largest)
    throw io_error(full.description() + ": " + std::to_string(o.class_count)
                   + " classes cannot hold label " + std::to_string(largest)
                   + " of the examples kept (labels keep their indices: use at least "
                   + std::to_string(largest + 1) + ")");
}

} // namespace

std::vector<int> parse_class_list(const std::string& text) {
  if (text.empty())
    throw std::invalid_argument("classes \"\": name at least one class (\"0-4\" or \"0,1,2\")");
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = std::min(text.find(',', start), text.size());
    const auto item = text.substr(start, comma - start);
    const auto dash = item.find('-');
    const int low = class_number(item.substr(0, dash), text);
    const int high = dash == std::string::npos ? low : class_number(item.substr(dash + 1), text);
    if (high < low)
      throw std::invalid_argument("classes \"" + text + "\": the range " + item
                                  + " runs backwards");
    for (int c = low; c <= high; ++c) {
      if (std::find(out.begin(), out.end(), c) != out.end())
        throw std::invalid_argument("classes \"" + text + "\": class " + std::to_string(c)
                                    + " is named twice");
      out.push_back(c);
    }
    start = comma + 1;
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string class_list_text(const std::vector<int>& classes) {
  std::string out;
  for (std::size_t i = 0; i < classes.size();) {
    auto j = i;
    while (j + 1 < classes.size() && classes[j + 1] == classes[j] + 1)
      ++j;
    out += (out.empty() ? "" : ",") + std::to_string(classes[i]);
    if (j > i)
      out += "-" + std::to_string(classes[j]);
    i = j + 1;
  }
  return out;
}

std::shared_ptr<const dataset> take_subset(std::shared_ptr<const dataset> full,
                                           const subset_options& o) {
  if (!o.active())
    return full;
  if (full->records() != nullptr)
    throw io_error(full->description() + ": a class filter, a first-N subset or a class count "
                   + "needs a dataset held in memory; RecordIO images are streamed");
  check_classes(*full, o);
  std::vector<std::int64_t> kept;
  for (std::int64_t i = 0; i < full->size(); ++i)
    if (o.classes.empty() || std::binary_search(o.classes.begin(), o.classes.end(), full->label(i)))
      kept.push_back(i);
  if (kept.empty())
    throw io_error(full->description() + ": " + subset_words(o) + " keeps no example");
  if (o.first > static_cast<std::int64_t>(kept.size()))
    throw io_error(
      full->description() + ": the first " + std::to_string(o.first) + " examples were asked for, "
      + (o.classes.empty() ? "it holds " : "its classes " + class_list_text(o.classes) + " hold ")
      + std::to_string(kept.size()));
  if (o.first > 0)
    kept.resize(static_cast<std::size_t>(o.first));
  const auto numel = static_cast<std::size_t>(full->sample_numel());
  std::vector<std::uint8_t> pixels(kept.size() * numel);
  std::vector<std::int32_t> labels;
  labels.reserve(kept.size());
  for (std::size_t k = 0; k < kept.size(); ++k) {
    std::copy_n(full->pixels(kept[k]), numel,
                pixels.begin() + static_cast<std::ptrdiff_t>(k * numel));
    labels.push_back(full->label(kept[k]));
  }
  const auto words = subset_words(o);
  auto description = full->description() + (words.empty() ? "" : " (" + words + ")");
  return std::make_shared<const dataset>(std::move(description), full->sample_shape(),
                                         o.class_count > 0 ? o.class_count : full->classes(),
                                         std::move(pixels), std::move(labels));
}

} // namespace troupe
