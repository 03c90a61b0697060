// How the key table's entries are written (section_keys.cpp, data_keys.cpp): a field of the
// job or of a data statement named by member pointers, ranges by their bounds, and an entry
// built up one property at a time, so that each key reads as one declaration.
//
// Thread-safety: plain values.
#pragma once

#include <troupe/graph/config/key_table.hpp>

namespace troupe::key_entries {

/// The field `Field` of the job's section `Section` (`&job_config::cluster,
/// &cluster_config::servers`).
template <auto Section, auto Field> auto& job_field(key_target& t) {
  return (t.job.*Section).*Field;
}
/// The field `Field` of the data statement being read (train or validation).
template <auto Field> auto& data_field(key_target& t) {
  return t.data.*Field;
}

inline key_range whole(double min, double max, const char* why = "") {
  return key_range{min, max, true, false, false, why};
}
inline key_range real(double min, double max, bool min_open = false, bool max_open = false) {
  return key_range{min, max, false, min_open, max_open, ""};
}

/// One entry, its properties set in turn: `entry("train", "seed", key_type::integer, field)
/// .within(whole(0, 100)).flag_is("seed").help_is("...")`.
struct entry {
  config_key key;
  entry(const char* section, const char* name, key_type type, key_value field = {})
      : key{section, name, type, field, std::nullopt} {}
  entry& within(key_range r) {
    key.range = r;
    return *this;
  }
  entry& flag_is(const char* f) {
    key.flag = f;
    return *this;
  }
  entry& help_is(const char* h, const char* more = "") {
    key.help = h;
    key.more = more;
    return *this;
  }
  entry& default_is(const char* d) {
    key.default_text = d;
    return *this;
  }
  entry& range_words(const char* w) {
    key.range_text = w;
    return *this;
  }
  entry& only_in(const char* o) {
    key.only = o;
    return *this;
  }
  entry& read_by(key_reader r) {
    key.read = r;
    return *this;
  }
  entry& checked_by(key_reader c) {
    key.check = c;
    return *this;
  }
  operator config_key() const { return key; }
};

/// Each section's entries, in the order the section reads them.
std::vector<config_key> cluster_keys();
std::vector<config_key> data_keys();
std::vector<config_key> model_keys();
std::vector<config_key> optimizer_keys();
std::vector<config_key> schedule_keys();
std::vector<config_key> train_keys();

} // namespace troupe::key_entries
