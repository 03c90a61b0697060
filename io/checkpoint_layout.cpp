// Reads the names and metadata keys that checkpoint_file.hpp lists. Strict: a tensor the
// layout does not name, or a key with a malformed value, is an error naming the file, because
// a resumed run that silently dropped part of the state would not be the run it claims to be.
#include "io/checkpoint_layout.hpp"

#include "io/checkpoint_codec.hpp"

namespace troupe {

namespace {

replica_state read_replica(layout_reader& r, std::size_t rank,
                           const std::vector<std::string>& buffers) {
  replica_state out;
  const auto prefix = rank == 0 ? std::string() : "worker" + std::to_string(rank) + "/";
  for (const auto& name : buffers)
    out.buffers.push_back({name, r.take(prefix + name)});
  out.streams = read_streams(r, "troupe.worker." + std::to_string(rank) + ".streams");
  return out;
}

// SGD's momentum, or the state tensors and update counts troupe.optimizer's optimizer keeps.
void read_optimizer_state(layout_reader& r, training_checkpoint& c) {
  if (r.has("troupe.optimizer")) {
    const auto name = r.text("troupe.optimizer");
    const auto kind = optimizer_of_name(name);
    if (!kind)
      r.fail("troupe.optimizer names '" + name + "', not an optimizer this Troupe has");
    c.optimizer = *kind;
  }
  std::vector<std::string> steps;
  if (c.optimizer != optimizer_kind::sgd) {
    steps = lines(r.text("troupe.optimizer_steps"));
    if (steps.size() != c.parameters.size())
      r.fail("troupe.optimizer_steps holds " + std::to_string(steps.size()) + " counts for "
             + std::to_string(c.parameters.size()) + " parameters");
  }
  const auto& names = optimizer_state_names(c.optimizer);
  for (std::size_t i = 0; i < c.parameters.size(); ++i) {
    const auto& p = c.parameters[i];
    optimizer_state s;
    for (const auto& name : names) {
      s.tensors.push_back(r.take(name + "/" + p.name));
      if (s.tensors.back().shape() != p.value.shape())
        r.fail(name + "/" + p.name + " has shape " + shape_string(s.tensors.back().shape())
               + ", the parameter " + shape_string(p.value.shape()));
    }
    if (!steps.empty())
      s.steps = r.integer("troupe.optimizer_steps", steps[i], 0);
    c.state.push_back(std::move(s));
  }
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
  read_optimizer_state(r, c);
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
