// `troupe train`'s RecordIO flags, named as MXNet's common/data.py names them: --data-train,
// --data-val and their -idx, --rgb-mean, --rgb-std (together the `data ... = recordio(...)`
// statements, so refused beside --config), and --skip-bad-records, --random-crop,
// --min-random-area, --max-random-area, --min-aspect-ratio, --max-aspect-ratio (overrides of
// those statements' keys).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/flags.hpp"
#include <troupe/graph/config/job_config.hpp>

namespace troupe {

struct record_flags {
  std::string train, train_index, val, val_index, rgb_mean, rgb_std;
  bool skip_bad_records = false;
  std::int64_t random_crop = -1; ///< -1: the statement's default
  double min_area = -1, max_area = -1;
  double min_aspect = -1, max_aspect = -1; ///< the crop's width / height range; -1: the key's

  void declare(flag_set& f);
};

/// The flags that make up the data statements.
extern const std::vector<std::string> record_statement_flags;

/// Throws usage_error naming the flag: values out of range, or statement flags without
/// --data-train.
void check_record_flags(const record_flags& r, const flag_set& f);

/// `data train = recordio(...)` and, with --data-val, `data val = recordio(...)`, as typed
/// overrides onto `o` (graph/config/job_config.hpp), with --image-shape and --num-classes when
/// given; the values are checked where the overrides are applied. Throws usage_error for
/// --dataset other than recordio, --data-dir, text that is not a shape or three numbers, or
/// --dataset recordio without --data-train.
void add_record_overrides(const record_flags& r, const flag_set& f, const std::string& dataset,
                          const std::string& image_shape, int num_classes, config_overrides& o);

/// --skip-bad-records (both statements), --random-crop, the random area and aspect ratio
/// (training) onto a parsed config; usage_error for an aspect ratio on data that is not
/// RecordIO, or ends that cross.
void apply_record_flags(const record_flags& r, const flag_set& f, data_config& train,
                        data_config& val);

} // namespace troupe
