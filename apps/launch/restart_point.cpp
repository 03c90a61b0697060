// See restart_point.hpp. Files are matched by name only; whether the newest one is whole and
// fits the job is the scheduler's check when it resumes (a refusal there ends the job).
#include "apps/launch/restart_point.hpp"

#include <filesystem>
#include <regex>

namespace troupe::launch {

namespace fs = std::filesystem;

namespace {

// The value of `--NAME V` / `--NAME=V` at args[i], advancing i past it; nothing elsewhere.
std::optional<std::string> value_at(const std::vector<std::string>& args, std::size_t& i,
                                    const std::string& name) {
  const auto flag = "--" + name;
  if (args[i] == flag && i + 1 < args.size())
    return args[++i];
  if (args[i].rfind(flag + "=", 0) == 0)
    return args[i].substr(flag.size() + 1);
  return std::nullopt;
}

} // namespace

std::optional<std::string> model_prefix_of(const std::vector<std::string>& node_args) {
  std::optional<std::string> found;
  for (std::size_t i = 0; i < node_args.size(); ++i)
    if (auto v = value_at(node_args, i, "model-prefix"))
      found = v;
  return found;
}

std::optional<saved_epoch> newest_checkpoint(const std::string& prefix) {
  const fs::path p(prefix);
  const auto folder = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const auto stem = p.filename().string();
  std::error_code error;
  fs::directory_iterator it(folder, error);
  if (error)
    return std::nullopt;
  // PREFIX-EEEE.safetensors or PREFIX-EEEE.manifest.json; parts (PREFIX-EEEE.NODE.safetensors)
  // do not match.
  const std::regex name("-([0-9]{4,})\\.(safetensors|manifest\\.json)");
  std::optional<saved_epoch> newest;
  for (const auto& entry : it) {
    const auto file = entry.path().filename().string();
    std::smatch m;
    if (file.rfind(stem, 0) != 0
        || !std::regex_match(file.cbegin() + static_cast<long>(stem.size()), file.cend(), m, name))
      continue;
    const auto digits = m[1].str();
    if (digits.size() > 15)
      continue;
    const auto epoch = std::stoll(digits);
    if (!newest || epoch > newest->epoch)
      newest = saved_epoch{epoch, (folder / file).string()};
  }
  return newest;
}

std::vector<std::string> resuming_from(const std::vector<std::string>& node_args,
                                       std::int64_t epoch) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node_args.size(); ++i)
    if (!value_at(node_args, i, "load-epoch"))
      out.push_back(node_args[i]);
  out.insert(out.end(), {"--load-epoch", std::to_string(epoch)});
  return out;
}

} // namespace troupe::launch
