// Record -> labelled RGB image, with every way a record can be wrong reported as an io_error
// that names the file and the record. Decoding errors come from the codec without a place;
// they get one here, the only layer that knows both.
#include <troupe/io/record_dataset.hpp>

#include <cmath>
#include <sstream>
#include <stdexcept>

#include <troupe/io/image_record.hpp>

namespace troupe {

namespace {

recordio_reader_options reader_options(const record_dataset_options& o) {
  recordio_reader_options r;
  r.index_path = o.index_path;
  r.skip_bad_records = o.skip_bad_records;
  return r;
}

const record_dataset_options& checked(const record_dataset_options& o) {
  bool ok = o.image_shape.size() == 3 && o.image_shape[0] == 3;
  for (auto extent : o.image_shape)
    ok = ok && extent > 0 && extent <= 65535;
  if (!ok)
    throw std::invalid_argument(o.path + ": image shape " + shape_string(o.image_shape)
                                + " is not 3 x H x W (RGB) with extents in 1..65535");
  if (o.classes < 1)
    throw std::invalid_argument(o.path + ": class count " + std::to_string(o.classes)
                                + " must be positive");
  return o;
}

std::string label_text(float label) {
  std::ostringstream text;
  text << label;
  return text.str();
}

} // namespace

image_records::image_records(record_dataset_options options)
    : options_(checked(options)), reader_(options_.path, reader_options(options_)) {}

image_records::example image_records::read(std::int64_t record) const {
  const auto payload = reader_.read(record); // io_error with file and record already
  const std::string where = options_.path + ": record " + std::to_string(record) + ": ";
  image_record parsed;
  try {
    parsed = parse_image_record(payload);
  } catch (const std::invalid_argument& e) {
    throw io_error(where + e.what());
  }
  const float label = parsed.labels.front();
  if (!(std::isfinite(label) && label == std::floor(label) && label >= 0
        && label < static_cast<float>(options_.classes)))
    throw io_error(where + "label " + label_text(label) + " is not a class in [0, "
                   + std::to_string(options_.classes)
                   + ") (the class count is --num-classes, or classes = in the config)");
  example out;
  out.label = static_cast<std::int32_t>(label);
  try {
    out.image = decode_jpeg(parsed.image, parsed.image_size);
  } catch (const image_decode_error& e) {
    throw io_error(where + "image (id " + std::to_string(parsed.id) + ", "
                   + std::to_string(parsed.image_size) + " bytes) does not decode: " + e.what());
  }
  return out;
}

std::shared_ptr<const dataset> open_record_dataset(const record_dataset_options& options) {
  auto records = std::make_shared<const image_records>(options);
  std::string description =
    "recordio " + options.path + " (" + std::to_string(records->size()) + " records";
  if (records->reader().bad_entries() > 0)
    description += ", " + std::to_string(records->reader().bad_entries())
                   + " corrupt stretch(es) kept as bad records";
  description += ")";
  if (records->size() == 0)
    throw io_error(options.path + ": no records");
  return std::make_shared<const dataset>(std::move(description), options.image_shape,
                                         options.classes, std::move(records));
}

} // namespace troupe
