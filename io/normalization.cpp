// The table behind standard_normalization (see normalization.hpp). The synthetic dataset has
// no entry on purpose: its statistics depend on its options, and pixel/255 already keeps it
// in a trainable range.
#include <troupe/io/normalization.hpp>

#include <stdexcept>

namespace troupe {

std::pair<std::vector<float>, std::vector<float>>
standard_normalization(const std::string& dataset_name) {
  if (dataset_name == "fashion-mnist")
    return {{0.2860f}, {0.3530f}};
  if (dataset_name == "mnist")
    return {{0.1307f}, {0.3081f}};
  if (dataset_name == "cifar10")
    return {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}};
  if (dataset_name == "imagenet") // the default of RecordIO image sets
    return {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};
  throw std::invalid_argument("no standard normalization for dataset '" + dataset_name
                              + "'; known: fashion-mnist, mnist, cifar10, imagenet");
}

} // namespace troupe
