#include "apps/key_flags.hpp"

#include <type_traits>

namespace troupe {

namespace {

// The value type a plain key's field holds; monostate for a field that is no single value.
template <typename T> struct field_value { using type = std::monostate; };
template <typename T> struct field_value<key_field<T>> { using type = T; };

// Whether a flag holds values of T: the types flag_set reads.
template <typename T>
constexpr bool flag_type =
  std::is_same_v<
    T,
    int> || std::is_same_v<T, std::int64_t> || std::is_same_v<T, double> || std::is_same_v<T, bool> || std::is_same_v<T, std::string>;

key_target target_of(job_config& config) {
  return key_target{config, config.train_data};
}

} // namespace

key_flags::key_flags(const std::set<std::string>& by_hand) {
  static job_config defaults;
  auto target = target_of(defaults);
  for (const auto& key : config_keys()) {
    if (*key.flag == '\0' || by_hand.count(key.flag))
      continue;
    std::visit(
      [&](auto field) {
        using T = typename field_value<decltype(field)>::type;
        if constexpr (flag_type<T>) {
          if (field != nullptr)
            entries_.push_back(entry{&key, value(std::in_place_type<T>, field(target).value)});
        }
      },
      key.field);
  }
}

void key_flags::declare(flag_set& f) {
  for (auto& e : entries_)
    std::visit(
      [&](auto& raw) {
        using T = std::decay_t<decltype(raw)>;
        if constexpr (std::is_same_v<T, bool>)
          f.add_switch(e.key->flag, raw, e.key->help);
        else
          f.add(e.key->flag, raw, e.key->help);
      },
      e.raw);
}

void key_flags::check(const flag_set& f) const {
  for (const auto& e : entries_) {
    if (!f.given(e.key->flag) || !e.key->range)
      continue;
    std::visit(
      [&](const auto& raw) {
        using T = std::decay_t<decltype(raw)>;
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
          if (!e.key->range->contains(static_cast<double>(raw)))
            throw usage_error(std::string("--") + e.key->flag + " must be "
                              + range_text(*e.key->range) + ", got "
                              + shortest_number(static_cast<double>(raw)));
        }
      },
      e.raw);
  }
}

void key_flags::apply(job_config& config, const flag_set& f, const std::string& section) const {
  auto target = target_of(config);
  for (const auto& e : entries_) {
    if (!f.given(e.key->flag) || (!section.empty() && section != e.key->section))
      continue;
    std::visit(
      [&](auto field) {
        using T = typename field_value<decltype(field)>::type;
        if constexpr (flag_type<T>) {
          // As a statement that does not take the key refuses it, so does its flag.
          const auto& dataset = config.train_data.dataset.value;
          if (std::string(e.key->section) == "data" && !e.key->taken_by(dataset))
            throw usage_error(std::string("--") + e.key->flag + " applies to "
                              + std::string(e.key->only) + " data, not " + dataset);
          auto& slot = field(target);
          slot.value = std::get<T>(e.raw);
          slot.span = source_span{};
          slot.given = true;
        }
      },
      e.key->field);
  }
}

std::set<std::string> key_flags::names() const {
  std::set<std::string> out;
  for (const auto& e : entries_)
    out.insert(e.key->flag);
  return out;
}

} // namespace troupe
