// Implementation notes: the checks name one tensor and what to do about it, since the usual
// cause is a classifier of another width (--num-classes) or another network, and the fix is
// --reset-layers or another checkpoint.
#include <troupe/actors/weights_init.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <stdexcept>

#include <troupe/io/checkpoint_parts.hpp>
#include <troupe/io/dataset.hpp>

namespace troupe {

namespace {

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size()
         && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

std::string layer_of(const std::string& parameter) {
  const auto dot = parameter.rfind('.');
  return dot == std::string::npos ? parameter : parameter.substr(0, dot);
}

std::string layer_list(model& reference) {
  std::vector<std::string> layers;
  for (const auto* p : reference.parameters())
    if (std::find(layers.begin(), layers.end(), layer_of(p->name)) == layers.end())
      layers.push_back(layer_of(p->name));
  std::string out;
  for (const auto& l : layers)
    out += (out.empty() ? "" : ", ") + l;
  return out;
}

bool starts_with_any(const std::string& name, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& p) { return name.compare(0, p.size(), p) == 0; });
}

} // namespace

init_source read_init_source(const std::string& spec) {
  if (ends_with(spec, ".safetensors"))
    return {spec, read_checkpoint(spec)};
  if (ends_with(spec, ".manifest.json"))
    return {spec, read_checkpoint_manifest(spec)};
  const auto dash = spec.rfind('-');
  const auto epoch = dash == std::string::npos ? std::string() : spec.substr(dash + 1);
  const bool digits = !epoch.empty() && epoch.size() <= 9
                      && std::all_of(epoch.begin(), epoch.end(),
                                     [](unsigned char c) { return std::isdigit(c) != 0; });
  if (!digits || dash == 0)
    throw std::invalid_argument("init_from \"" + spec
                                + "\": name a checkpoint as PREFIX-EPOCH (runs/lenet-3), or its "
                                  ".safetensors or .manifest.json file");
  const auto prefix = spec.substr(0, dash);
  const auto e = std::stoll(epoch);
  return {existing_checkpoint_path(prefix, e), read_any_checkpoint(prefix, e)};
}

std::vector<std::string> reset_parameters(model& reference,
                                          const std::vector<std::string>& prefixes) {
  std::vector<std::string> names;
  for (const auto& prefix : prefixes) {
    bool matched = false;
    for (const auto* p : reference.parameters())
      matched = matched || (!prefix.empty() && p->name.compare(0, prefix.size(), prefix) == 0);
    if (!matched)
      throw std::invalid_argument("reset_layers: " + prefix + " matches no layer of "
                                  + reference.name() + " (its layers: " + layer_list(reference)
                                  + ")");
  }
  for (const auto* p : reference.parameters())
    if (starts_with_any(p->name, prefixes))
      names.push_back(p->name);
  return names;
}

std::vector<tensor> weights_from(const init_source& source, model& reference,
                                 const std::vector<std::string>& prefixes) {
  reset_parameters(reference, prefixes); // refuses a prefix that matches nothing
  auto refuse = [&](const std::string& what) { throw io_error(source.file + ": " + what); };
  std::map<std::string, const tensor*> saved;
  for (const auto& t : source.checkpoint.parameters)
    saved[t.name] = &t.value;
  std::vector<tensor> out;
  for (const auto* p : reference.parameters()) {
    if (starts_with_any(p->name, prefixes)) {
      out.push_back(p->value);
      continue;
    }
    const auto it = saved.find(p->name);
    if (it == saved.end())
      refuse("holds no tensor " + p->name + ", which the model (" + reference.name()
             + ") has: a checkpoint of another network (" + source.checkpoint.network
             + "), or pass --reset-layers " + layer_of(p->name) + " to initialize it afresh");
    if (it->second->shape() != p->value.shape())
      refuse("holds " + p->name + " " + shape_string(it->second->shape()) + " where the model ("
             + reference.name() + ") has " + p->name + " " + shape_string(p->value.shape())
             + ": pass --reset-layers " + layer_of(p->name) + " to initialize it afresh");
    out.push_back(*it->second);
  }
  for (const auto& [name, value] : saved) {
    const bool known = std::any_of(reference.parameters().begin(), reference.parameters().end(),
                                   [&](const parameter* p) { return p->name == name; });
    if (!known && !starts_with_any(name, prefixes))
      refuse("holds " + name + " " + shape_string(value->shape()) + ", which the model ("
             + reference.name() + ") lacks: a checkpoint of another network ("
             + source.checkpoint.network + ")");
  }
  return out;
}

std::string init_line(const init_source& source, model& reference,
                      const std::vector<std::string>& prefixes) {
  const auto fresh = reset_parameters(reference, prefixes);
  std::string names;
  for (const auto& n : fresh)
    names += (names.empty() ? "" : ", ") + n;
  const auto& c = source.checkpoint;
  const auto all = reference.parameters().size();
  return "Initializing from " + source.file + " (" + c.network + " after epoch "
         + std::to_string(c.epoch) + ", " + std::to_string(c.replicas.size())
         + " compute(s)): " + std::to_string(all - fresh.size()) + " of " + std::to_string(all)
         + " parameters from it, training from epoch 0"
         + (fresh.empty() ? std::string() : "; from the initializer: " + names);
}

fine_tuning_start fine_tuning_start_of(const std::string& spec, model& reference,
                                       const std::vector<std::string>& prefixes,
                                       const init_source* loaded) {
  std::optional<init_source> read;
  if (!loaded) {
    read = read_init_source(spec);
    loaded = &*read;
  }
  return {weights_from(*loaded, reference, prefixes), init_line(*loaded, reference, prefixes)};
}

} // namespace troupe
