// Labelled JPEG images in an MXNet RecordIO file (`.rec` of image records, optional `.idx`),
// read one record at a time so a set much larger than memory can be trained on.
//
// Opening reads only the record offsets (recordio_reader.hpp); the dataset it returns is a
// streamed `dataset` (dataset::records()) whose batches batch_source builds by reading,
// decoding and augmenting just the records of each batch. The class of a record is its first
// label (MXNet's single-label convention; multi-label records train on label 0), which must
// be an integer in [0, classes).
//
// Every failure of one record (framing, a header shorter than it claims, a JPEG that does not
// decode, a label out of range) is an io_error "<file>: record <i> ...: <what>". Whether that
// stops the run or only drops the record is batch_source's decision (skip_bad_records).
//
// Thread-safety: immutable after construction; read() may run on any number of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <troupe/io/dataset.hpp>
#include <troupe/io/jpeg_codec.hpp>
#include <troupe/io/recordio_reader.hpp>

namespace troupe {

struct record_dataset_options {
  std::string path;                 ///< the .rec file
  std::string index_path;           ///< its .idx, or "" to walk the file
  shape_t image_shape{3, 224, 224}; ///< what batches hold: 3 x H x W
  int classes = 1000;
  bool skip_bad_records = false; ///< drop records that fail instead of stopping
};

class image_records {
public:
  /// Throws io_error (file problems, see recordio_reader) or std::invalid_argument (an image
  /// shape that is not 3 x H x W with positive extents, classes < 1).
  explicit image_records(record_dataset_options options);

  std::int64_t size() const { return reader_.size(); }
  const record_dataset_options& options() const { return options_; }
  const recordio_reader& reader() const { return reader_; }

  struct example {
    rgb_image image;
    std::int32_t label = 0;
  };
  /// Reads, parses and decodes record i, and checks its label. Throws io_error naming the
  /// file and the record.
  example read(std::int64_t record) const;

private:
  record_dataset_options options_;
  recordio_reader reader_;
};

/// A streamed dataset over the records; its description names the file, the record count
/// and any corrupt stretches kept as bad records.
std::shared_ptr<const dataset> open_record_dataset(const record_dataset_options& options);

} // namespace troupe
