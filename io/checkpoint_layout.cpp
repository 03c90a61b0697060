// Reads the names and metadata keys that checkpoint_file.hpp lists. Strict: a tensor the
// layout does not name, or a key with a malformed value, is an error naming the file, because
// a resumed run that silently dropped part of the state would not be the run it claims to be.
#include "io/checkpoint_layout.hpp"

#include <cctype>
#include <cstring>
#include <map>
#include <sstream>

#include <troupe/io/dataset.hpp>

namespace troupe {

namespace {

class layout_reader {
public:
  layout_reader(const std::string& path, safetensors_content& content)
      : path_(path), content_(content) {
    for (auto& t : content_.tensors)
      tensors_.emplace(t.name, &t.value);
  }

  [[noreturn]] void fail(const std::string& what) const { throw io_error(path_ + ": " + what); }

  const std::string& text(const std::string& key) const {
    auto it = content_.metadata.find(key);
    if (it == content_.metadata.end())
      fail("metadata lacks " + key + " (not a Troupe checkpoint, or a damaged one)");
    return it->second;
  }

  std::int64_t integer(const std::string& key, const std::string& value, std::int64_t low) const {
    std::int64_t v = 0;
    std::size_t used = 0;
    try {
      v = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || v < low)
      fail("metadata " + key + " has the bad value '" + value + "'");
    return v;
  }
  std::int64_t integer(const std::string& key, std::int64_t low) const {
    return integer(key, text(key), low);
  }

  // Takes the tensor out of the pool of unclaimed ones.
  tensor take(const std::string& name) {
    auto it = tensors_.find(name);
    if (it == tensors_.end())
      fail("tensor '" + name + "' is missing");
    tensor t = *it->second;
    tensors_.erase(it);
    return t;
  }

  void require_all_taken() const {
    if (!tensors_.empty())
      fail("tensor '" + tensors_.begin()->first + "' is not part of a Troupe checkpoint");
  }

private:
  const std::string& path_;
  safetensors_content& content_;
  std::map<std::string, tensor*> tensors_;
};

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, separator);)
    out.push_back(item);
  return out;
}

shard_counters read_shard(const layout_reader& r, const std::string& key) {
  const auto& value = r.text(key);
  shard_counters s;
  const auto fields = split(value, ' ');
  if (fields.size() != 3 || fields[0].rfind("step=", 0) != 0 || fields[1].rfind("lr=", 0) != 0
      || fields[2].rfind("last=", 0) != 0 || fields[1].size() != 11)
    r.fail("metadata " + key + " has the bad value '" + value + "'");
  s.updates = r.integer(key, fields[0].substr(5), 0);
  std::uint32_t bits = 0;
  for (char c : fields[1].substr(3)) {
    if (!std::isxdigit(static_cast<unsigned char>(c)))
      r.fail("metadata " + key + " has the bad value '" + value + "'");
    bits = bits * 16
           + static_cast<std::uint32_t>(
             std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  std::memcpy(&s.last_learning_rate, &bits, sizeof bits);
  for (const auto& pair : split(fields[2].substr(5), ',')) {
    const auto colon = pair.find(':');
    if (colon == std::string::npos)
      r.fail("metadata " + key + " has the bad value '" + value + "'");
    const auto source = r.integer(key, pair.substr(0, colon), 0);
    s.last_steps[static_cast<int>(source)] = r.integer(key, pair.substr(colon + 1), 0);
  }
  return s;
}

replica_state read_replica(layout_reader& r, std::size_t worker,
                           const std::vector<std::string>& buffers) {
  replica_state out;
  const auto prefix = worker == 0 ? std::string() : "worker" + std::to_string(worker) + "/";
  for (const auto& name : buffers)
    out.buffers.push_back({name, r.take(prefix + name)});
  const auto key = "troupe.worker." + std::to_string(worker) + ".streams";
  for (const auto& item : split(r.text(key), ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      r.fail("metadata " + key + " has the bad entry '" + item + "'");
    out.streams.emplace_back(item.substr(0, eq),
                             static_cast<std::uint64_t>(r.integer(key, item.substr(eq + 1), 0)));
  }
  return out;
}

} // namespace

training_checkpoint checkpoint_of(const std::string& path, safetensors_content content) {
  layout_reader r(path, content);
  if (r.text("troupe.format") != "1")
    r.fail("checkpoint format " + r.text("troupe.format") + " is not one this Troupe reads (1)");
  training_checkpoint c;
  c.epoch = r.integer("troupe.epoch", 0);
  c.network = r.text("troupe.network");
  c.steps_per_epoch = r.integer("troupe.steps_per_epoch", 0);
  for (const auto& name : lines(r.text("troupe.parameters")))
    c.parameters.push_back({name, r.take(name)});
  for (const auto& p : c.parameters) {
    c.momentum.push_back(r.take("momentum/" + p.name));
    if (c.momentum.back().shape() != p.value.shape())
      r.fail("momentum/" + p.name + " has shape " + shape_string(c.momentum.back().shape())
             + ", the parameter " + shape_string(p.value.shape()));
  }
  const auto buffers = lines(r.text("troupe.buffers"));
  const auto workers = r.integer("troupe.workers", 1);
  for (std::int64_t w = 0; w < workers; ++w)
    c.replicas.push_back(read_replica(r, static_cast<std::size_t>(w), buffers));
  for (std::size_t w = 1; w < c.replicas.size(); ++w)
    for (std::size_t b = 0; b < buffers.size(); ++b)
      if (c.replicas[w].buffers[b].value.shape() != c.replicas[0].buffers[b].value.shape())
        r.fail("worker" + std::to_string(w) + "/" + buffers[b] + " has shape "
               + shape_string(c.replicas[w].buffers[b].value.shape()) + ", worker 0's "
               + shape_string(c.replicas[0].buffers[b].value.shape()));
  const auto shards = r.integer("troupe.shards", 1);
  for (std::int64_t s = 0; s < shards; ++s)
    c.shards.push_back(read_shard(r, "troupe.shard." + std::to_string(s)));
  r.require_all_taken();
  return c;
}

} // namespace troupe
