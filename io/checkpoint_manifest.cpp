// The manifest codec (checkpoint_manifest.hpp): the encoder refuses what the decoder would
// refuse, so a manifest this code writes always reads back.
#include "io/checkpoint_manifest.hpp"

#include <set>
#include <stdexcept>

#include "io/strict_json.hpp"
#include <troupe/io/dataset.hpp>

namespace troupe {

namespace {

using json = nlohmann::ordered_json;

const std::string format_name = "troupe checkpoint manifest";
constexpr std::uint64_t format_version = 1;

bool plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos
         && name.find('\0') == std::string::npos;
}

bool checksum_text(const std::string& text) {
  if (text.size() != 7 + 64 || text.compare(0, 7, "sha256:") != 0)
    return false;
  for (std::size_t i = 7; i < text.size(); ++i)
    if (!((text[i] >= '0' && text[i] <= '9') || (text[i] >= 'a' && text[i] <= 'f')))
      return false;
  return true;
}

// Reads one object's members, each exactly once; `done` refuses any it was not asked for.
class members {
public:
  members(const std::string& path, const json& object, std::string where)
      : path_(path), object_(object), where_(std::move(where)) {
    if (!object_.is_object())
      fail("is not a JSON object");
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw io_error(path_ + ": " + where_ + " " + what);
  }
  const json& get(const std::string& key) {
    const auto it = object_.find(key);
    if (it == object_.end())
      fail("lacks \"" + key + "\"");
    seen_.insert(key);
    return *it;
  }
  std::string text(const std::string& key) {
    const auto& v = get(key);
    if (!v.is_string())
      fail("has \"" + key + "\" not a string");
    return v.get<std::string>();
  }
  std::uint64_t count(const std::string& key) {
    try {
      return json_unsigned(get(key), "\"" + key + "\"");
    } catch (const std::invalid_argument& e) {
      fail(std::string("has ") + e.what());
    }
  }
  const json& array(const std::string& key) {
    const auto& v = get(key);
    if (!v.is_array())
      fail("has \"" + key + "\" not an array");
    return v;
  }
  void done() const {
    for (const auto& item : object_.items())
      if (!seen_.count(item.key()))
        fail("has the unknown member \"" + item.key() + "\"");
  }

private:
  const std::string& path_;
  const json& object_;
  std::string where_;
  std::set<std::string> seen_;
};

shape_t read_shape(members& m, const json& extents) {
  if (!extents.is_array())
    m.fail("has \"shape\" not an array");
  shape_t shape;
  for (const auto& e : extents) {
    if (!e.is_number_unsigned() || e.get<std::uint64_t>() == 0
        || e.get<std::uint64_t>() > (std::uint64_t{1} << 40))
      m.fail("has an extent that is not a positive integer");
    shape.push_back(static_cast<std::int64_t>(e.get<std::uint64_t>()));
  }
  return shape;
}

} // namespace

std::string encode_checkpoint_manifest(const checkpoint_header& header,
                                       const std::vector<part_record>& parts) {
  auto refuse = [](const std::string& what) {
    throw std::invalid_argument("checkpoint manifest: " + what);
  };
  if (parts.empty())
    refuse("no parts");
  if (header.parameter_names.size() != header.parameter_shapes.size())
    refuse("parameter names and shapes differ in count");
  if (header.workers < 1 || header.shards < 1 || header.epoch < 0 || header.steps_per_epoch < 0)
    refuse("a run of " + std::to_string(header.workers) + " worker(s), "
           + std::to_string(header.shards) + " shard(s), epoch " + std::to_string(header.epoch));
  json doc = json::object();
  doc["format"] = format_name;
  doc["version"] = format_version;
  doc["epoch"] = header.epoch;
  doc["network"] = header.network;
  doc["steps_per_epoch"] = header.steps_per_epoch;
  doc["workers"] = header.workers;
  doc["shards"] = header.shards;
  doc["parameters"] = json::array();
  for (std::size_t slot = 0; slot < header.parameter_names.size(); ++slot)
    doc["parameters"].push_back(
      {{"name", header.parameter_names[slot]}, {"shape", header.parameter_shapes[slot]}});
  doc["parts"] = json::array();
  std::set<std::string> files;
  for (const auto& p : parts) {
    if (!plain_file_name(p.file) || !files.insert(p.file).second)
      refuse("part file '" + p.file + "' given twice or not a plain file name");
    if (!checksum_text(p.checksum))
      refuse("part " + p.file + " has the checksum '" + p.checksum + "' (not sha256:<hex>)");
    doc["parts"].push_back({{"file", p.file}, {"bytes", p.bytes}, {"checksum", p.checksum}});
  }
  // One member per line, and one parameter or part per line: readable and diffable.
  std::string text = "{";
  for (const auto& [key, value] : doc.items()) {
    text += (text.size() > 1 ? ",\n  " : "\n  ") + json(key).dump() + ": ";
    if (!value.is_array()) {
      text += value.dump();
      continue;
    }
    text += "[";
    for (std::size_t i = 0; i < value.size(); ++i)
      text += (i ? ",\n    " : "\n    ") + value[i].dump();
    text += "\n  ]";
  }
  return text + "\n}\n";
}

checkpoint_manifest decode_checkpoint_manifest(const std::string& path, const std::string& text) {
  json doc;
  try {
    doc = parse_strict_json(text);
  } catch (const std::invalid_argument& e) {
    throw io_error(path + ": not a valid manifest (malformed JSON " + e.what() + ")");
  }
  members top(path, doc, "the manifest");
  if (top.text("format") != format_name)
    top.fail("has format \"" + top.text("format") + "\", not \"" + format_name + "\"");
  const auto version = top.count("version");
  if (version != format_version)
    top.fail("has format version " + std::to_string(version) + ", not one this Troupe reads ("
             + std::to_string(format_version) + ")");
  checkpoint_manifest out;
  auto& h = out.header;
  h.epoch = static_cast<std::int64_t>(top.count("epoch"));
  h.network = top.text("network");
  h.steps_per_epoch = static_cast<std::int64_t>(top.count("steps_per_epoch"));
  const auto workers = top.count("workers");
  h.shards = static_cast<std::size_t>(top.count("shards"));
  if (workers < 1 || workers > (1u << 20) || h.shards < 1 || h.shards > (1u << 20))
    top.fail("names " + std::to_string(workers) + " worker(s) and " + std::to_string(h.shards)
             + " shard(s): at least 1 of each");
  h.workers = static_cast<int>(workers);
  for (const auto& p : top.array("parameters")) {
    members param(path, p, "parameter " + std::to_string(h.parameter_names.size()));
    h.parameter_names.push_back(param.text("name"));
    h.parameter_shapes.push_back(read_shape(param, param.get("shape")));
    param.done();
  }
  std::set<std::string> files;
  for (const auto& p : top.array("parts")) {
    members part(path, p, "part " + std::to_string(out.parts.size()));
    part_record r;
    r.file = part.text("file");
    r.bytes = part.count("bytes");
    r.checksum = part.text("checksum");
    part.done();
    if (!plain_file_name(r.file))
      part.fail("has the file \"" + r.file
                + "\", not a plain file name in the manifest's directory");
    if (!files.insert(r.file).second)
      part.fail("names " + r.file + " a second time");
    if (!checksum_text(r.checksum))
      part.fail("has the checksum \"" + r.checksum + "\", not sha256:<64 hex digits>");
    out.parts.push_back(std::move(r));
  }
  if (out.parts.empty())
    top.fail("names no parts");
  top.done();
  return out;
}

} // namespace troupe
